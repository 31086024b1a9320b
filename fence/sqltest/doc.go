// Package sqltest holds the tests of package fence's SQL guard on real
// databases: PostgreSQL (a server the tests start, through pgx's
// database/sql driver) and SQLite (modernc.org/sqlite, pure Go). It is a
// module of its own, so that the drivers never enter the core module's
// dependencies.
package sqltest

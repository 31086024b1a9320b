package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/warden-go/warden/client"
)

// aclPlaceholder stands for the password in an ACL SETUSER line printed
// without --password.
const aclPlaceholder = "REPLACE_WITH_A_PASSWORD"

// aclCmd prints the ACL rules of client.ACLRules or
// client.ReadOnlyACLRules; with --user, a whole ACL SETUSER line.
type aclCmd struct {
	ReadOnly bool   `help:"The rules of ls, inspect, watch, clients and doctor (read only) instead of a warden client's."`
	Names    string `arg:"" optional:"" default:"*" help:"The glob the lock names share (orders:*)."`
}

func (c *aclCmd) Run(_ context.Context, a *app) error {
	rules := client.ACLRules
	if c.ReadOnly {
		rules = client.ReadOnlyACLRules
	}
	// --user and --password are the global flags: acl connects nowhere,
	// and takes them for the user it writes the line for. Only a password
	// given on this command line is written, never REDIS_PASSWORD's.
	user := ""
	if a.given["user"] {
		user = a.cli.User
		if err := validACLUser(user); err != nil {
			return err
		}
	}
	password := ""
	if a.given["password"] {
		if user == "" {
			return fail(exitUsage, "warden: acl --password needs --user NAME (the user the ACL SETUSER line is for)")
		}
		password = a.cli.Password
		if password == "" {
			return fail(exitUsage, "warden: acl --password: empty")
		}
	}
	s, err := rules(c.Names)
	if err != nil {
		return err
	}
	if user == "" {
		fmt.Fprintln(a.stdout, s)
		return nil
	}
	pass := password
	if pass == "" {
		pass = aclPlaceholder
	}
	// A rule holds no space (the glob may not), but may hold a quote.
	fields := strings.Fields(s)
	for i, f := range fields {
		fields[i] = cliQuote(f)
	}
	// resetpass first: run again with a new password, the line replaces
	// the user's passwords instead of adding one beside the old.
	fmt.Fprintf(a.stdout, "ACL SETUSER %s on resetpass %s %s\n", user, cliQuote(">"+pass), strings.Join(fields, " "))
	if password == "" {
		fmt.Fprintf(a.stderr, "warden: replace %s with the user's password before running the line (or give --password)\n", aclPlaceholder)
	}
	return nil
}

// validACLUser checks an ACL user name for an ACL SETUSER line: 1 to 256
// bytes of UTF-8 without spaces or control characters (redis-cli would
// split it, Redis refuses some).
func validACLUser(name string) error {
	if name == "" || len(name) > 256 {
		return fail(exitUsage, "warden: acl --user: want 1 to 256 bytes, got %d", len(name))
	}
	if !utf8.ValidString(name) || strings.IndexFunc(name, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == '"' || r == '\''
	}) >= 0 {
		return fail(exitUsage, "warden: acl --user: %s holds a space, quote or control character, or is not UTF-8", strconv.Quote(name))
	}
	return nil
}

// cliQuote is s as one argument of a redis-cli line: as it is when it has
// no space, quote, backslash or control character, else in double quotes
// with those escaped (\", \\, \n, \xHH), which redis-cli reads back as s.
func cliQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return r <= ' ' || r == '"' || r == '\'' || r == '\\' || r == 0x7f
	}) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c < ' ' || c == 0x7f || c >= 0x80:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

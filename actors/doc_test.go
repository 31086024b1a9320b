package actors

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docPackage is what a package declares, for checking a doc's references:
// its top-level names, and each type's methods and fields.
type docPackage struct {
	names   map[string]bool
	members map[string]map[string]bool // type → method or field → true
}

func parseDocPackage(t *testing.T, dir string) docPackage {
	t.Helper()
	p := docPackage{names: map[string]bool{}, members: map[string]map[string]bool{}}
	member := func(typ, name string) {
		if p.members[typ] == nil {
			p.members[typ] = map[string]bool{}
		}
		p.members[typ][name] = true
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					p.names[d.Name.Name] = true
					continue
				}
				recv := d.Recv.List[0].Type
				if s, ok := recv.(*ast.StarExpr); ok {
					recv = s.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					member(id.Name, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							p.names[n.Name] = true
						}
					case *ast.TypeSpec:
						p.names[s.Name.Name] = true
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									member(s.Name.Name, n.Name)
								}
								if len(fl.Names) == 0 { // embedded: its type's name
									typ := fl.Type
									if s, ok := typ.(*ast.StarExpr); ok {
										typ = s.X
									}
									if id, ok := typ.(*ast.Ident); ok {
										member(s.Name.Name, id.Name)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return p
}

// The package doc is the engine's map, and stays true: it names every
// file of the package, every file it names exists, and every
// Type.member or package.Name it cites is declared in actors, client,
// redisio or messages.
func TestPackageDocIsTheMap(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	text := f.Doc.Text()

	paths, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") || path == "doc.go" {
			continue
		}
		assert.Contains(t, text, path, "doc.go says what %s holds and whose it is", path)
	}
	for _, m := range regexp.MustCompile(`[\w/]+\.(?:go|lua)\b`).FindAllString(text, -1) {
		path := m
		if strings.Contains(m, "/") {
			path = filepath.Join("..", m)
		}
		_, err := os.Stat(path)
		assert.NoError(t, err, "doc.go names %s", m)
	}

	pkgs := map[string]docPackage{
		"actors":   parseDocPackage(t, "."),
		"client":   parseDocPackage(t, filepath.Join("..", "client")),
		"redisio":  parseDocPackage(t, filepath.Join("..", "redisio")),
		"messages": parseDocPackage(t, filepath.Join("..", "messages")),
	}
	checked := 0
	for _, m := range regexp.MustCompile(`\b([A-Za-z]\w*)\.([A-Za-z]\w*)\b`).FindAllStringSubmatch(text, -1) {
		x, y := m[1], m[2]
		if y == "go" || y == "lua" {
			continue // a file name, checked above
		}
		if p, ok := pkgs[x]; ok {
			assert.True(t, p.names[y], "doc.go cites %s.%s, which %s does not declare", x, y, x)
			checked++
			continue
		}
		found, typ := false, false
		for _, p := range pkgs {
			if members, ok := p.members[x]; ok || p.names[x] {
				typ = true
				found = found || members[y]
			}
		}
		if typ {
			assert.True(t, found, "doc.go cites %s.%s, which %s does not have", x, y, x)
			checked++
		}
	}
	assert.Greater(t, checked, 30, "doc.go's references are checked")
}

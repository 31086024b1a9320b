package exampleredis

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docBlock is one ```go block of a Markdown file.
type docBlock struct {
	file string // the Markdown file, absolute
	line int    // the line of the block's first line of code
	// module is the directory, from the repository's root, of the module
	// the block compiles in ("```go module=integrations/gocron"); "" is the
	// core module.
	module string
	code   string
}

// goBlocks returns the ```go blocks of the Markdown file path.
func goBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var (
		blocks []docBlock
		cur    *docBlock
		code   strings.Builder
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```go") &&
			(len(line) == len("```go") || line[len("```go")] == ' '):
			cur = &docBlock{file: path, line: n + 1}
			for _, field := range strings.Fields(line[len("```go"):]) {
				if dir, ok := strings.CutPrefix(field, "module="); ok {
					cur.module = dir
				}
			}
			code.Reset()
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.code = code.String()
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			code.WriteString(line)
			code.WriteByte('\n')
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "%s: a ```go block that never ends", path)
	return blocks
}

// docPackages are the packages a block may use without importing them:
// its name, its import path and one of its names, which keeps the import
// used whatever the blocks use of it.
var docPackages = []struct{ name, path, keep string }{
	{"context", "context", "Background"},
	{"errors", "errors", "New"},
	{"fmt", "fmt", "Sprint"},
	{"os", "os", "Getenv"},
	{"filepath", "path/filepath", "Join"},
	{"sql", "database/sql", "Open"},
	{"testing", "testing", "Short"},
	{"time", "time", "Second"},
	{"redis", "github.com/redis/go-redis/v9", "NewClient"},
	{"actor", "github.com/asynkron/protoactor-go/actor", "NewActorSystem"},
	{"require", "github.com/stretchr/testify/require", "NoError"},
	{"client", "github.com/warden-go/warden/client", "New"},
	{"election", "github.com/warden-go/warden/election", "New"},
	{"fence", "github.com/warden-go/warden/fence", "ErrStaleToken"},
	{"messages", "github.com/warden-go/warden/messages", "Join"},
	{"sim", "github.com/warden-go/warden/sim", "Run"},
	{"wardentest", "github.com/warden-go/warden/wardentest", "New"},
	{"gocron", "github.com/go-co-op/gocron/v2", "NewScheduler"},
	{"wardengocron", "github.com/warden-go/warden/integrations/gocron", "NewLocker"},
}

// docNames are the names a block may use without declaring them, as the
// text around a snippet introduces them ("c is a *client.Client"), each
// declared only where a block uses it and declares none of that name
// itself.
var docNames = []struct{ name, typ string }{
	{"ctx", "context.Context"},
	{"c", "*client.Client"},
	{"c1", "*client.Client"},
	{"c2", "*client.Client"},
	{"c3", "*client.Client"},
	{"rdb", "redis.UniversalClient"},
	{"db", "*sql.DB"},
	{"l", "*client.Lock"},
	{"store", "interface{ Write(token int64, data []byte) error }"},
	{"data", "[]byte"},
	{"done", "chan struct{}"},
	{"hostname", "string"},
	{"ship", "func(ctx context.Context, order int) error"},
	{"runJob", "func(ctx context.Context, l *client.Lock, lease time.Duration, work func()) error"},
}

// docFile writes the Go file the blocks (of one Markdown file, in one
// module) compile as, each under a //line comment that names the block's
// own file and line: statements go into a function of their own, with the
// names they declare used once at the end; declarations stand as they
// are, their imports joined to the file's.
func docFile(t *testing.T, blocks []docBlock) string {
	t.Helper()
	imports := map[string]string{} // path → name ("" for the package's own)
	var body strings.Builder
	declared := map[string]bool{}
	for _, b := range blocks {
		fset := token.NewFileSet()
		if f, err := parser.ParseFile(fset, "", "package p\n"+b.code, parser.SkipObjectResolution); err == nil {
			code := strings.Split(b.code, "\n")
			for _, imp := range f.Imports {
				name := ""
				if imp.Name != nil {
					name = imp.Name.Name
				}
				imports[strings.Trim(imp.Path.Value, `"`)] = name
			}
			for _, d := range f.Decls {
				if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
					for l := fset.Position(g.Pos()).Line; l <= fset.Position(g.End()).Line; l++ {
						code[l-2] = "" // keeps the lines of what follows
					}
				}
				for _, name := range declNames(d) {
					declared[name] = true
				}
			}
			fmt.Fprintf(&body, "\n//line %s:%d\n%s\n", b.file, b.line, strings.Join(code, "\n"))
			continue
		}
		const head = "package p\nfunc _() error {\n"
		f, err := parser.ParseFile(fset, "", head+b.code+"}\n", parser.SkipObjectResolution)
		if err != nil {
			line := b.line
			var list scanner.ErrorList
			if errors.As(err, &list) && len(list) > 0 {
				line += list[0].Pos.Line - strings.Count(head, "\n") - 1
				err = fmt.Errorf("column %d: %s", list[0].Pos.Column, list[0].Msg)
			}
			t.Errorf("%s:%d: the block (from line %d) is neither declarations nor statements: %v", b.file, line, b.line, err)
			continue
		}
		stmts := f.Decls[0].(*ast.FuncDecl).Body.List
		var used []string
		for _, s := range stmts {
			used = append(used, stmtNames(s)...)
		}
		code := strings.TrimRight(b.code, "\n")
		tail := ""
		if len(used) > 0 {
			tail = "_ = []any{" + strings.Join(used, ", ") + "}\n"
		}
		if len(stmts) > 0 {
			if _, ok := stmts[len(stmts)-1].(*ast.ReturnStmt); ok {
				// Use the names before the block's own return: nothing may follow it.
				last := fset.Position(stmts[len(stmts)-1].Pos()).Line - 3 // 0-based line in code: head has two lines
				lines := strings.Split(code, "\n")
				code = strings.Join(lines[:last], "\n") + "\n" + tail + strings.Join(lines[last:], "\n")
				fmt.Fprintf(&body, "\nfunc _() error {\n//line %s:%d\n%s\n}\n", b.file, b.line, code)
				continue
			}
		}
		fmt.Fprintf(&body, "\nfunc _() error {\n//line %s:%d\n%s\n%sreturn nil\n}\n", b.file, b.line, code, tail)
	}
	all := body.String()
	var env strings.Builder
	for _, n := range docNames {
		if !declared[n.name] && regexp.MustCompile(`\b`+n.name+`\b`).MatchString(all) {
			fmt.Fprintf(&env, "\t%s %s\n", n.name, n.typ)
		}
	}
	var keep strings.Builder
	for _, p := range docPackages {
		_, imported := imports[p.path]
		if imported || regexp.MustCompile(`\b`+p.name+`\.`).MatchString(all+env.String()) {
			if !imported {
				imports[p.path] = ""
			}
			name := p.name
			if n := imports[p.path]; n != "" {
				name = n
			}
			fmt.Fprintf(&keep, "\t_ = %s.%s\n", name, p.keep)
		}
	}
	var src strings.Builder
	src.WriteString("// Code made by TestDocCodeCompiles from Markdown; do not edit.\n\npackage doccode\n\nimport (\n")
	paths := make([]string, 0, len(imports))
	for p := range imports {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(&src, "\t%s %q\n", imports[p], p)
	}
	src.WriteString(")\n\nvar (\n" + keep.String() + ")\n")
	if env.Len() > 0 {
		src.WriteString("\n// The names the text around the blocks introduces.\nvar (\n" + env.String() + ")\n")
	}
	src.WriteString(all)
	return src.String()
}

// declNames are the package-level names d declares (not methods).
func declNames(d ast.Decl) []string {
	var names []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			names = append(names, d.Name.Name)
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names = append(names, n.Name)
				}
			case *ast.TypeSpec:
				names = append(names, s.Name.Name)
			}
		}
	}
	return names
}

// stmtNames are the variables a statement at a block's top level declares.
func stmtNames(s ast.Stmt) []string {
	var names []string
	add := func(id *ast.Ident) {
		if id.Name != "_" && !slices.Contains(names, id.Name) {
			names = append(names, id.Name)
		}
	}
	switch s := s.(type) {
	case *ast.AssignStmt:
		if s.Tok == token.DEFINE {
			for _, e := range s.Lhs {
				if id, ok := e.(*ast.Ident); ok {
					add(id)
				}
			}
		}
	case *ast.DeclStmt:
		if g, ok := s.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
			for _, sp := range g.Specs {
				for _, id := range sp.(*ast.ValueSpec).Names {
					add(id)
				}
			}
		}
	}
	return names
}

// repoRoot is the repository's root, absolute.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	return root
}

// The Go code of README.md and docs/*.md compiles and passes go vet, so a
// snippet never shows a call that no longer exists: each Markdown file's
// blocks are made into one package (see docFile) and vetted in the module
// they name, and a block that stops compiling fails with its file and line.
func TestDocCodeCompiles(t *testing.T) {
	root := repoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	for _, md := range files {
		byModule := map[string][]docBlock{}
		for _, b := range goBlocks(t, md) {
			byModule[b.module] = append(byModule[b.module], b)
		}
		for module, blocks := range byModule {
			rel, _ := filepath.Rel(root, md)
			t.Run(strings.Trim(rel+" "+module, " "), func(t *testing.T) {
				src := docFile(t, blocks)
				dir := t.TempDir()
				file := filepath.Join(dir, "doccode.go")
				require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
				vet := exec.Command("go", "vet", file)
				vet.Dir = filepath.Join(root, module)
				out, err := vet.CombinedOutput()
				if err != nil {
					t.Errorf("a Go block of %s does not compile or fails go vet (the lines are the Markdown file's):\n%s", rel, out)
				}
			})
		}
	}
}

// The README's quickstart is what examples/quickstart runs (go run
// ./examples/quickstart): its code, past its imports, is in the example
// word for word.
func TestReadmeQuickstartIsTheExample(t *testing.T) {
	root := repoRoot(t)
	var quick *docBlock
	readme := repoFile(t, "README.md")
	at := strings.Index(readme, "\n## Quickstart\n")
	require.GreaterOrEqual(t, at, 0, "README.md has a Quickstart section")
	at = strings.Count(readme[:at], "\n") + 1
	for _, b := range goBlocks(t, filepath.Join(root, "README.md")) {
		if b.line > at {
			quick = &b
			break
		}
	}
	require.NotNil(t, quick, "the Quickstart section has a Go block")
	code := quick.code
	if i := strings.Index(code, "\n)\n"); strings.HasPrefix(code, "import (") && i >= 0 {
		code = strings.TrimLeft(code[i+len("\n)\n"):], "\n")
	}
	example := repoFile(t, filepath.Join("examples", "quickstart", "main.go"))
	assert.True(t, strings.Contains(example, code),
		"README.md:%d: the quickstart's code, past its imports, is not word for word in examples/quickstart/main.go", quick.line)
}

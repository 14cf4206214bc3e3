package openapicheck

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"unicode"

	"gopkg.in/yaml.v3"
)

// raw is docs/openapi.yaml as written (a YAML tree), for the checks of what generators and
// linters read: descriptions, examples, names.
func raw(t *testing.T) map[string]any {
	t.Helper()
	src, err := os.ReadFile(DefaultPath())
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := yaml.Unmarshal(src, &tree); err != nil {
		t.Fatal(err)
	}
	return tree
}

func child(m any, keys ...string) map[string]any {
	for _, k := range keys {
		mm, _ := m.(map[string]any)
		m = mm[k]
	}
	out, _ := m.(map[string]any)
	return out
}

// walkSchemas calls f with every object that has `properties`, anywhere in the document, and
// where it is.
func walkSchemas(v any, where string, f func(where string, props map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		if p, ok := x["properties"].(map[string]any); ok {
			f(where, p)
		}
		for k, c := range x {
			walkSchemas(c, where+"/"+k, f)
		}
	case []any:
		for i, c := range x {
			walkSchemas(c, fmt.Sprintf("%s/%d", where, i), f)
		}
	}
}

// Every property of every schema, in components and in place, has a description: generated
// clients turn them into the doc comments of their fields.
func TestEveryPropertyIsDescribed(t *testing.T) {
	n := 0
	walkSchemas(raw(t), "#", func(where string, props map[string]any) {
		for name := range props {
			n++
			if d, _ := child(props, name)["description"].(string); strings.TrimSpace(d) == "" {
				t.Errorf("%s/properties/%s has no description", where, name)
			}
		}
	})
	if n < 200 {
		t.Fatalf("found only %d properties: the walk is broken", n)
	}
}

// mediaTypes calls f with every media type of a request body or response (component or in
// place), and where it is.
func mediaTypes(tree map[string]any, f func(where string, status string, mt map[string]any)) {
	visit := func(where, status string, r map[string]any) {
		for name := range child(r, "content") {
			f(where+" "+name, status, child(r, "content", name))
		}
	}
	ops := func(prefix string, items map[string]any) {
		for path := range items {
			for method := range child(items, path) {
				op := child(items, path, method)
				if op["responses"] == nil {
					continue
				}
				where := prefix + method + " " + path
				visit(where+" request", "request", child(op, "requestBody"))
				for status := range child(op, "responses") {
					visit(where+" "+status, status, child(op, "responses", status))
				}
			}
		}
	}
	ops("", child(tree, "paths"))
	ops("webhook ", child(tree, "webhooks"))
	for name := range child(tree, "components", "responses") {
		visit("components/responses/"+name, "component", child(tree, "components", "responses", name))
	}
}

// Every operation has an example of each request body and answer it documents, and every
// refusal answer lists the codes it may carry as examples of the Refusal body, one per code,
// each a code of the Refusal schema.
func TestEveryOperationAndRefusalHasAnExample(t *testing.T) {
	tree := raw(t)
	known := map[string]bool{}
	for _, c := range child(tree, "components", "schemas", "Refusal", "properties", "code")["x-extensible-enum"].([]any) {
		known[c.(string)] = true
	}
	examples := child(tree, "components", "examples")
	n := 0
	mediaTypes(tree, func(where, status string, mt map[string]any) {
		n++
		if ref, _ := child(mt, "schema")["$ref"].(string); ref == "#/components/schemas/Refusal" {
			if len(child(mt, "examples")) == 0 {
				t.Errorf("%s: a refusal with no example of its codes", where)
			}
			for name := range child(mt, "examples") {
				ex := child(mt, "examples", name)
				if r, _ := ex["$ref"].(string); r != "" {
					ex = child(examples, strings.TrimPrefix(r, "#/components/examples/"))
				}
				code, _ := child(ex, "value")["code"].(string)
				if code != name || !known[code] {
					t.Errorf("%s: example %q carries code %q (known: %v)", where, name, code, known[code])
				}
			}
			return
		}
		if mt["example"] == nil && len(child(mt, "examples")) == 0 {
			t.Errorf("%s: no example", where)
		}
	})
	if n < 80 {
		t.Fatalf("found only %d media types: the walk is broken", n)
	}
}

// The refusal codes are an open set: no `code` property anywhere is a closed enum (a new code
// would break a strict client), and the Refusal schema lists the known ones as
// x-extensible-enum.
func TestRefusalCodesAreAnOpenSet(t *testing.T) {
	tree := raw(t)
	walkSchemas(tree, "#", func(where string, props map[string]any) {
		if c := child(props, "code"); c != nil && (c["enum"] != nil || c["const"] != nil) {
			t.Errorf("%s/properties/code is closed (%v)", where, c["enum"])
		}
	})
	code := child(tree, "components", "schemas", "Refusal", "properties", "code")
	if code["type"] != "string" || len(code["x-extensible-enum"].([]any)) < 50 {
		t.Errorf("Refusal.code: %v", code)
	}
}

// goName is the type name oapi-codegen gives a component: its name without the characters Go
// identifiers lack, the first letter upper case.
func goName(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// No two components that generators turn into types (schemas, responses, parameters, request
// bodies, headers) share a name, as Go types would spell them: oapi-codegen refuses a document
// where they do.
func TestComponentNamesAreUniqueAsTypeNames(t *testing.T) {
	tree := raw(t)
	seen := map[string][]string{}
	for _, kind := range []string{"schemas", "responses", "parameters", "requestBodies", "headers"} {
		for name := range child(tree, "components", kind) {
			g := goName(name)
			seen[g] = append(seen[g], kind+"/"+name)
		}
	}
	var dup []string
	for g, where := range seen {
		if len(where) > 1 {
			sort.Strings(where)
			dup = append(dup, g+": "+strings.Join(where, ", "))
		}
	}
	sort.Strings(dup)
	for _, d := range dup {
		t.Errorf("two components are one type name: %s", d)
	}
	if len(seen) < 60 {
		t.Fatalf("found only %d components: the walk is broken", len(seen))
	}
}

package pagekit

import (
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/text/language"
)

// refuseScript refuses what would be a script of a shop's template: a <script> element, an
// on* event attribute, a javascript: URL. The CSP would not run them (only our script's hash
// is allowed), but a page that silently does nothing is worse than a provision that fails
// with the file and line.
func refuseScript(name, src string) error {
	z := html.NewTokenizer(strings.NewReader(src))
	line := 1
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() == io.EOF {
				return nil
			}
			return fmt.Errorf("page: %s:%d: %v", name, line, z.Err())
		}
		raw := string(z.Raw())
		if tt == html.StartTagToken || tt == html.SelfClosingTagToken {
			tok := z.Token()
			if tok.Data == "script" {
				return fmt.Errorf("page: %s:%d: <script> in a template: the page runs our script only (write {{.Script}} once)", name, line)
			}
			for _, a := range tok.Attr {
				if strings.HasPrefix(a.Key, "on") {
					return fmt.Errorf("page: %s:%d: %s attribute: the page runs no script of the template's", name, line, a.Key)
				}
				if strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:") {
					return fmt.Errorf("page: %s:%d: a javascript: URL in %s: the page runs no script of the template's", name, line, a.Key)
				}
			}
		}
		line += strings.Count(raw, "\n")
	}
}

//go:embed messages/*.json
var builtin embed.FS

// loadCatalogues reads our catalogues, then the shop's files over them, and fills in every
// language's missing keys from English.
func (k *Kit) loadCatalogues(shop []string) error {
	k.cats = map[string]map[string]entry{}
	entries, _ := builtin.ReadDir("messages")
	for _, e := range entries {
		b, _ := builtin.ReadFile("messages/" + e.Name())
		if err := k.addCatalogue("messages/"+e.Name(), b); err != nil {
			return err
		}
	}
	for _, p := range shop {
		files := []string{p}
		if st, err := os.Stat(p); err != nil {
			return fmt.Errorf("page: messages: %w", err)
		} else if st.IsDir() {
			files, _ = filepath.Glob(filepath.Join(p, "*.json"))
			if len(files) == 0 {
				return fmt.Errorf("page: messages: %s holds no <language>.json file", p)
			}
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return fmt.Errorf("page: messages: %w", err)
			}
			if err := k.addCatalogue(f, b); err != nil {
				return err
			}
		}
	}
	en := k.cats["en"]
	for _, cat := range k.cats {
		for key, v := range en {
			if _, ok := cat[key]; !ok {
				cat[key] = v
			}
		}
	}
	// English first: the matcher's answer when nothing matches.
	k.tags = []language.Tag{language.English}
	for _, l := range k.Languages() {
		if l != "en" {
			k.tags = append(k.tags, language.MustParse(l))
		}
	}
	k.matcher = language.NewMatcher(k.tags)
	return nil
}

// addCatalogue lays one file (<language>.json: a JSON object of key to text or plural forms) over the
// catalogue of its language.
func (k *Kit) addCatalogue(file string, b []byte) error {
	tag, err := language.Parse(strings.TrimSuffix(filepath.Base(file), ".json"))
	if err != nil {
		return fmt.Errorf("page: messages: %s: the file's name is not a language tag (de.json, zh-Hans.json): %v", file, err)
	}
	var m map[string]entry
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("page: messages: %s: %v (want a JSON object of key to text, or to a count's plural forms)", file, err)
	}
	cat := k.cats[tag.String()]
	if cat == nil {
		cat = map[string]entry{}
		k.cats[tag.String()] = cat
	}
	for key, v := range m {
		cat[key] = v
	}
	return nil
}

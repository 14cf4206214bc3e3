package pagekit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/text/feature/plural"
	"golang.org/x/text/language"
)

// A catalogue's entry is a text, or a count's plural forms: a JSON object naming the
// placeholder that holds the count and one text per CLDR plural category the language uses
// ("zero", "one", "two", "few", "many", "other"; "other" always):
//
//	"room.ahead": {"count": "ahead", "one": "{ahead} person ahead of you.", "other": "{ahead} people ahead of you."}
//
// The page (kit.js) picks the form with the browser's Intl.PluralRules, the gateway's templates
// (Data.T) with golang.org/x/text's CLDR rules (older than the browsers': see laterMany).
type entry struct {
	text  string
	count string            // the placeholder holding the count; "" for a plain text
	forms map[string]string // category -> text
}

// pluralCategories are CLDR's cardinal categories, in the order they are listed.
var pluralCategories = []string{"zero", "one", "two", "few", "many", "other"}

var formName = map[plural.Form]string{plural.Other: "other", plural.Zero: "zero", plural.One: "one",
	plural.Two: "two", plural.Few: "few", plural.Many: "many"}

func (m *entry) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &m.text)
	}
	var obj map[string]string
	if err := json.Unmarshal(b, &obj); err != nil {
		return fmt.Errorf("a message is a text or an object of plural forms: %v", err)
	}
	m.count = obj["count"]
	delete(obj, "count")
	if m.count == "" {
		return fmt.Errorf(`plural forms without "count" (the placeholder holding the number)`)
	}
	if _, ok := obj["other"]; !ok {
		return fmt.Errorf(`plural forms of {%s} without "other"`, m.count)
	}
	for cat, s := range obj {
		if !slices.Contains(pluralCategories, cat) {
			return fmt.Errorf("plural forms of {%s}: %q is not a CLDR category (%s)", m.count, cat, strings.Join(pluralCategories, ", "))
		}
		if !strings.Contains(s, "{"+m.count+"}") && cat == "other" {
			return fmt.Errorf("plural form %q does not show {%s}", cat, m.count)
		}
	}
	m.forms = obj
	return nil
}

func (m entry) MarshalJSON() ([]byte, error) {
	if m.count == "" {
		return json.Marshal(m.text)
	}
	obj := map[string]string{"count": m.count}
	for k, v := range m.forms {
		obj[k] = v
	}
	return json.Marshal(obj)
}

// form is the text for the count n in lang (a plain text whatever n is).
func (m entry) form(lang language.Tag, n int) string {
	if m.count == "" {
		return m.text
	}
	if n < 0 {
		n = -n
	}
	if s, ok := m.forms[formName[plural.Cardinal.MatchPlural(lang, n, 0, 0, 0, 0)]]; ok {
		return s
	}
	return m.forms["other"]
}

// other is the text, or the plural form "other".
func (m entry) other() string {
	if m.count == "" {
		return m.text
	}
	return m.forms["other"]
}

// laterMany are the languages whose "many" (a million and up: "1 millón de personas") CLDR
// added after the rules golang.org/x/text carries; browsers' Intl.PluralRules have it, so a
// catalogue of theirs needs the form, which the gateway's templates (Data.T) answer as "other".
var laterMany = map[string]bool{"es": true, "fr": true, "pt": true, "it": true, "ca": true}

// PluralCategories are the CLDR cardinal categories lang's whole numbers fall in (every one
// of them needs a form in a plural message of that language).
func PluralCategories(lang language.Tag) []string {
	seen := map[string]bool{}
	for n := 0; n <= 1_000_000; n = next(n) {
		seen[formName[plural.Cardinal.MatchPlural(lang, n, 0, 0, 0, 0)]] = true
	}
	if base, _ := lang.Base(); laterMany[base.String()] {
		seen["many"] = true
	}
	var out []string
	for _, c := range pluralCategories {
		if seen[c] {
			out = append(out, c)
		}
	}
	return out
}

// next walks every number to 1 000 and then the round ones (CLDR's rules tell numbers apart
// by their last digits and by a million).
func next(n int) int {
	if n < 1000 {
		return n + 1
	}
	return n * 10
}

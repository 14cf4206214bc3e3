package pagekit

import (
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/language"
)

// countPlaceholders are the placeholders that hold a count of things (people, units,
// entries, entrants, units bought): a message showing one must have plural forms.
var countPlaceholders = []string{"ahead", "units", "entries", "entrants", "bought"}

// shipped are the languages of our catalogues.
var shipped = []string{"ar", "de", "en", "es", "fr", "ja", "ko", "pt-BR", "zh-Hans"}

// Every catalogue we ship (all nine) has every key of English's (the fallback to English is
// for a shop's new languages, not for ours), the same placeholders, and, for every message
// that shows a count, plural forms for each CLDR category of its language and none it never
// uses.
func TestEveryCatalogueHasEveryKeyAndEveryPluralForm(t *testing.T) {
	raw := map[string]map[string]entry{}
	files, _ := builtin.ReadDir("messages")
	for _, f := range files {
		b, _ := builtin.ReadFile("messages/" + f.Name())
		var m map[string]entry
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
		raw[strings.TrimSuffix(f.Name(), path.Ext(f.Name()))] = m
	}
	for _, lang := range shipped {
		if raw[lang] == nil {
			t.Errorf("no catalogue %s.json", lang)
		}
	}
	if len(raw) != len(shipped) {
		t.Errorf("%d catalogues, want the %d of %v", len(raw), len(shipped), shipped)
	}
	en := raw["en"]
	if len(en) < 50 {
		t.Fatalf("en.json has %d keys", len(en))
	}
	for lang, cat := range raw {
		tag := language.MustParse(lang)
		need := PluralCategories(tag)
		for key, want := range en {
			got, ok := cat[key]
			if !ok {
				t.Errorf("%s.json lacks %s", lang, key)
				continue
			}
			if placeholders(want) != placeholders(got) {
				t.Errorf("%s.json %s: placeholders %s, English has %s", lang, key, placeholders(got), placeholders(want))
			}
			for _, c := range countPlaceholders {
				if strings.Contains(want.other(), "{"+c+"}") && want.count != c {
					t.Errorf("en.json %s shows the count {%s} without plural forms", key, c)
				}
			}
			if want.count == "" {
				continue
			}
			if got.count != want.count {
				t.Errorf("%s.json %s: plural forms of {%s}, want {%s}", lang, key, got.count, want.count)
				continue
			}
			for _, c := range need {
				if _, ok := got.forms[c]; !ok {
					t.Errorf("%s.json %s lacks the plural form %q (%s uses %v)", lang, key, c, lang, need)
				}
			}
			for c := range got.forms {
				if !slices.Contains(need, c) && c != "other" {
					t.Errorf("%s.json %s has the plural form %q, which %s never uses (%v)", lang, key, c, lang, need)
				}
			}
		}
		for key := range cat {
			if _, ok := en[key]; !ok {
				t.Errorf("%s.json has %s, which en.json does not", lang, key)
			}
		}
	}
}

var placeholder = regexp.MustCompile(`\{\w+\}`)

// placeholders are the {name}s of every form of m, sorted and deduplicated.
func placeholders(m entry) string {
	texts := []string{m.text}
	for _, s := range m.forms {
		texts = append(texts, s)
	}
	var out []string
	for _, s := range texts {
		out = append(out, placeholder.FindAllString(s, -1)...)
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), " ")
}

// CLDR's categories whole numbers fall in (golang.org/x/text's rules, with the later "many"
// of es, fr and pt) for the languages the pages ship and the ones that make a catalogue's work
// hard (ru's integers are never "other", which a catalogue still needs for decimals); and a
// form is chosen by them.
func TestPluralFormsFollowCLDR(t *testing.T) {
	for lang, want := range map[string]string{
		"en": "one other", "de": "one other", "es": "one many other", "fr": "one many other", "pt": "one many other",
		"ja": "other", "ko": "other", "zh-Hans": "other", "ar": "zero one two few many other", "ru": "one few many",
	} {
		if got := strings.Join(PluralCategories(language.MustParse(lang)), " "); got != want {
			t.Errorf("%s: categories %q, want %q", lang, got, want)
		}
	}
	ahead := entry{count: "ahead", forms: map[string]string{"zero": "z", "one": "o", "two": "t", "few": "f", "many": "m", "other": "x"}}
	for _, tc := range []struct {
		lang string
		n    int
		want string
	}{{"en", 1, "o"}, {"en", 0, "x"}, {"en", 2, "x"}, {"ar", 0, "z"}, {"ar", 2, "t"}, {"ar", 3, "f"}, {"ar", 11, "m"}, {"ar", 100, "x"},
		{"es", 1, "o"}, {"es", 5, "x"}, {"ja", 1, "x"}} {
		if got := ahead.form(language.MustParse(tc.lang), tc.n); got != tc.want {
			t.Errorf("%s, %d: form %q, want %q", tc.lang, tc.n, got, tc.want)
		}
	}
}

// One waiter reads "1 person", not "1 people": in a template (Data.T) and in the page's data.
func TestOneWaiterIsOnePerson(t *testing.T) {
	k, err := New(testKind, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for lang, want := range map[string][]string{"en": {"1 person ahead of you.", "2 people ahead of you."},
		"de": {"1 Person vor Ihnen.", "2 Personen vor Ihnen."}, "es": {"1 persona delante de usted.", "2 personas delante de usted."},
		"fr": {"1 personne devant vous.", "2 personnes devant vous."}, "pt-BR": {"1 pessoa na sua frente.", "2 pessoas na sua frente."},
		"ja": {"あなたの前に1人います。", "あなたの前に2人います。"}, "ko": {"앞에 1명이 있습니다.", "앞에 2명이 있습니다."},
		"zh-Hans": {"您前面还有 1 人。", "您前面还有 2 人。"},
		// Arabic's six: 1 and 2 said in words, 3 to 10 with a plural noun, 11 to 99 with a
		// singular accusative, 100 with a singular genitive; 103 is "few" again.
		"ar": {"أمامك شخص واحد.", "أمامك شخصان.", "أمامك 3 أشخاص.", "أمامك 11 شخصًا.", "أمامك 100 شخص.", "أمامك 103 أشخاص."},
	} {
		d := k.data(lang, "s", nil)
		for i, n := range []int{1, 2, 3, 11, 100, 103}[:len(want)] {
			if got, err := d.T("room.ahead", "ahead", n); err != nil || got != want[i] {
				t.Errorf("%s, %d ahead: %q (%v), want %q", lang, n, got, err, want[i])
			}
		}
		if !strings.Contains(string(d.Script)+k.PluralMessage(lang, "room.ahead", 1), "{ahead}") {
			t.Errorf("%s: no plural message for the page", lang)
		}
	}
	// A plural message without "other", or with a category CLDR has not, is refused.
	for _, bad := range []string{`{"count":"n","one":"{n} x"}`, `{"count":"n","other":"{n} x","several":"{n}"}`, `{"one":"a","other":"{n}"}`} {
		var e entry
		if err := json.Unmarshal([]byte(bad), &e); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

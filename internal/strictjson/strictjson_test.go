package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

type difficulty [2]int

func (d *difficulty) UnmarshalJSON(b []byte) error {
	var v []int
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if len(v) != 2 {
		return errors.New("two numbers")
	}
	*d = difficulty{v[0], v[1]}
	return nil
}

type base struct {
	Note string `json:"note,omitempty"`
}

// body has the shapes of the admin API's bodies: nested structs, a slice of them, a map, a
// time, a type that decodes itself, an interface, an embedded struct and an untagged field.
type body struct {
	base
	ID       string         `json:"id"`
	Stock    int            `json:"stock"`
	Starts   time.Time      `json:"starts_at"`
	Room     *room          `json:"room,omitempty"`
	Variants []variant      `json:"variants,omitempty"`
	Labels   map[string]int `json:"labels,omitempty"`
	Extra    any            `json:"extra,omitempty"`
	Plain    int
	Skipped  int `json:"-"`
}

type room struct {
	Rate       *float64    `json:"rate,omitempty"`
	Difficulty *difficulty `json:"difficulty,omitempty"`
}

type variant struct {
	ID    string `json:"id"`
	Stock int    `json:"stock"`
}

// looseDecode decodes as Unmarshal does without its key checks: encoding/json with
// DisallowUnknownFields, one value and nothing after it.
func looseDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}

func TestARepeatedKeyIsRefusedAtAnyDepth(t *testing.T) {
	for _, in := range []string{
		`{"id":"a","id":"b"}`,
		`{"id":"a","\u0069d":"b"}`,
		`{"room":{"rate":1,"rate":2}}`,
		`{"variants":[{"id":"a","stock":1},{"id":"b","stock":1,"stock":2}]}`,
		`{"labels":{"x":1,"x":2}}`,
		`{"extra":{"k":[{"a":1,"a":1}]}}`,
		`{"room":{"difficulty":[1,2]},"room":null}`,
		`{"note":"a","note":"b"}`,
	} {
		var v body
		if err := Unmarshal([]byte(in), &v); !errors.Is(err, ErrDuplicateKey) {
			t.Errorf("%s: %v, want ErrDuplicateKey", in, err)
		}
		if err := looseDecode([]byte(in), new(body)); err != nil {
			t.Errorf("%s: encoding/json refuses it too (%v): the case proves nothing", in, err)
		}
	}
}

func TestAKeyInAnotherCaseIsAnUnknownField(t *testing.T) {
	for _, in := range []string{
		`{"ID":"a"}`, `{"Stock":1}`, `{"room":{"Rate":1}}`, `{"variants":[{"Id":"a"}]}`,
		`{"plain":1}`, `{"NOTE":"x"}`, "{\"\u017ftock\":1}", // ſ: encoding/json folds it to s
	} {
		var v body
		if err := Unmarshal([]byte(in), &v); !errors.Is(err, ErrUnknownField) {
			t.Errorf("%s: %v, want ErrUnknownField", in, err)
		}
		if err := looseDecode([]byte(in), new(body)); err != nil {
			t.Errorf("%s: encoding/json refuses it too (%v): the case proves nothing", in, err)
		}
	}
	for _, in := range []string{`{"Skipped":1}`, `{"-":1}`, `{"unknown":1}`} {
		if err := Unmarshal([]byte(in), new(body)); err == nil {
			t.Errorf("%s accepted", in)
		}
	}
}

func TestAWellFormedBodyDecodesAsEncodingJSONDecodesIt(t *testing.T) {
	in := `{"id":"s1","stock":5,"starts_at":"2030-01-01T00:00:00Z","room":{"rate":2.5,"difficulty":[1,2]},
		"variants":[{"id":"a","stock":2},{"id":"b","stock":3}],"labels":{"x":1,"X":2},"extra":{"a":[1,{"b":null}]},
		"Plain":7,"note":"n"}`
	var strict, loose body
	if err := Unmarshal([]byte(in), &strict); err != nil {
		t.Fatal(err)
	}
	if err := looseDecode([]byte(in), &loose); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(strict, loose) {
		t.Fatalf("strict %+v, encoding/json %+v", strict, loose)
	}
	for _, in := range []string{`{"id":"a"} {}`, `{"id":"a"}x`, `{"room":{"difficulty":[1,2,3]}}`, "[" + strings.Repeat("[", MaxDepth) + "]"} {
		if err := Unmarshal([]byte(in), new(body)); err == nil {
			t.Errorf("%s accepted", in)
		}
	}
	if err := Decode(strings.NewReader(` {"id":"a"} `+"\n"), new(body)); err != nil {
		t.Fatalf("surrounding whitespace: %v", err)
	}
}

// FuzzUnmarshalRefusesOnlyWhatEncodingJSONLetsBy: what Unmarshal accepts, encoding/json (with
// DisallowUnknownFields) decodes to the same value; what it refuses and encoding/json accepts
// is a repeated key, a key that is no field's exact name, or nesting past MaxDepth.
func FuzzUnmarshalRefusesOnlyWhatEncodingJSONLetsBy(f *testing.F) {
	for _, s := range []string{`{"id":"a","stock":1}`, `{"id":"a","id":"b"}`, `{"ID":"a"}`, `{"room":{"difficulty":[1,2]}}`,
		`{"variants":[{"id":"a","stock":1,"Stock":2}]}`, `{"labels":{"a":1,"a":2}}`, `{"extra":[[[{}]]]}`, `null`, `{} {}`,
		`{"starts_at":"2030-01-01T00:00:00Z","note":"x","Plain":1}`, "{\"\\u0069d\":\"a\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict, loose body
		serr := Unmarshal(data, &strict)
		lerr := looseDecode(data, &loose)
		switch {
		case serr == nil && lerr != nil:
			t.Fatalf("%q: accepted; encoding/json refuses it: %v", data, lerr)
		case serr == nil && !reflect.DeepEqual(strict, loose):
			t.Fatalf("%q: decoded %+v; encoding/json %+v", data, strict, loose)
		case serr != nil && lerr == nil && !errors.Is(serr, ErrDuplicateKey) && !errors.Is(serr, ErrUnknownField) && !errors.Is(serr, ErrTooDeep):
			t.Fatalf("%q: refused (%v); encoding/json accepts it", data, serr)
		}
	})
}

// Package strictjson decodes the JSON bodies the product accepts from the network (the buy body
// at the gateway, the admin API's bodies at the backend) as encoding/json does with
// DisallowUnknownFields, and refuses what encoding/json lets by:
//
//   - a key given twice in one object: encoding/json keeps the last, so a proxy, a WAF or a log
//     that reads the first sees another request than the one served;
//   - a key that names a struct field in another case ("Add", "QUANTITY"; Unicode folds such as
//     the Kelvin sign for "k"): encoding/json matches names case-insensitively;
//   - anything after the value.
//
// Keys are checked against the target's type before decoding: a struct's keys must be exactly
// the names encoding/json would give its fields (the json tag's name, else the Go name). Inside a
// value whose type decodes itself (json.Unmarshaler, encoding.TextUnmarshaler), a map or an
// interface, only repeated keys are refused.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
)

// Errors of the checks encoding/json does not make; each wraps the offending key.
var (
	ErrDuplicateKey = errors.New("strictjson: duplicate key")
	ErrUnknownField = errors.New("strictjson: unknown field (names are case-sensitive)")
	ErrTrailingData = errors.New("strictjson: data after the JSON value")
	ErrTooDeep      = errors.New("strictjson: nested too deeply")
)

// MaxDepth bounds the nesting of arrays and objects: far beyond any body of the contract,
// small enough that the check's recursion stays shallow.
const MaxDepth = 64

// Unmarshal decodes data, exactly one JSON value (surrounding whitespace allowed), into v, a
// non-nil pointer, refusing repeated keys, keys that are not exactly a field's name, and unknown
// fields.
func Unmarshal(data []byte, v any) error {
	if err := checkKeys(data, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailingData
	}
	return nil
}

// Decode reads r to its end and unmarshals it as Unmarshal does. Bound r (http.MaxBytesReader).
func Decode(r io.Reader, v any) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return Unmarshal(data, v)
}

// checkKeys walks data's tokens beside the type t they decode into.
func checkKeys(data []byte, t reflect.Type) error {
	w := walker{dec: json.NewDecoder(bytes.NewReader(data))}
	if err := w.value(t); err != nil {
		return err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return ErrTrailingData
	}
	return nil
}

type walker struct {
	dec   *json.Decoder
	depth int
}

// value checks the next value, which decodes into t (nil: a type whose keys are not known).
func (w *walker) value(t reflect.Type) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	if w.depth++; w.depth > MaxDepth {
		return ErrTooDeep
	}
	defer func() { w.depth-- }()
	t = target(t)
	if d == '{' {
		return w.object(t)
	}
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for w.dec.More() {
		if err := w.value(elem); err != nil {
			return err
		}
	}
	_, err = w.dec.Token() // ']'
	return err
}

// object checks the members of an object whose '{' was read.
func (w *walker) object(t reflect.Type) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = fieldsOf(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // the decoder yields an object's keys as strings, unescaped
		if seen[key] {
			return fmt.Errorf("%w %q", ErrDuplicateKey, key)
		}
		seen[key] = true
		ft := elem
		if fields != nil {
			var ok bool
			if ft, ok = fields[key]; !ok {
				return fmt.Errorf("%w %q", ErrUnknownField, key)
			}
		}
		if err := w.value(ft); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // '}'
	return err
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// target is the type whose keys a value of type t must have: t without its pointers, or nil
// when t decodes itself or is unknown (an interface).
func target(t reflect.Type) reflect.Type {
	for t != nil {
		if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) ||
			t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
			return nil
		}
		switch t.Kind() {
		case reflect.Pointer:
			t = t.Elem()
		case reflect.Interface:
			return nil
		default:
			return t
		}
	}
	return nil
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// fieldsOf maps each JSON name of struct t's fields, as encoding/json names them, to the field's
// type; the fields of an embedded struct without a tag are promoted, as encoding/json does.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	addFields(m, t, 0)
	fieldCache.Store(t, m)
	return m
}

func addFields(m map[string]reflect.Type, t reflect.Type, depth int) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && depth < 8 {
				addFields(m, ft, depth+1)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := m[name]; !dup || depth == 0 {
			m[name] = f.Type // a field of the struct itself hides a promoted one
		}
	}
}

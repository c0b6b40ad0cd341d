package nativehost

import (
	"bytes"
	"encoding/json"
)

// filterFrame returns m with every string of its params and result (keys
// included) and its error's message passed through f. A document that
// does not decode is left as it is: Encode refuses it.
func filterFrame(m Message, f func(string) string) Message {
	m.Params = filterJSON(m.Params, f)
	m.Result = filterJSON(m.Result, f)
	if m.Error != nil {
		e := *m.Error
		e.Message = f(e.Message)
		m.Error = &e
	}
	return m
}

// filterJSON returns raw with every string and object key passed through
// f; raw itself when f changed none (so a frame keeps its bytes).
func filterJSON(raw json.RawMessage, f func(string) string) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return raw
	}
	v, changed := filterValue(v, f)
	if !changed {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

func filterValue(v any, f func(string) string) (any, bool) {
	switch t := v.(type) {
	case string:
		s := f(t)
		return s, s != t
	case []any:
		changed := false
		for i, x := range t {
			y, c := filterValue(x, f)
			t[i], changed = y, changed || c
		}
		return t, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(t))
		for k, x := range t {
			y, c := filterValue(x, f)
			k2 := f(k)
			out[k2], changed = y, changed || c || k2 != k
		}
		return out, changed
	}
	return v, false
}

// heldIn returns the first name held reports for a string or object key
// of the JSON document raw, "" when none does. A document that does not
// decode is judged as one string.
func heldIn(raw json.RawMessage, held func(string) string) string {
	if len(raw) == 0 {
		return ""
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return held(string(raw))
	}
	name := ""
	filterValue(v, func(s string) string {
		if name == "" {
			name = held(s)
		}
		return s
	})
	return name
}

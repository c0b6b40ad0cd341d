package contract

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
)

// marshalActionGeneral is the reference MarshalJSON is held to: the
// members written one by one with encoding/json, in the same order.
func marshalActionGeneral(a Action) ([]byte, error) {
	fields, ok := actionFields[a.Type]
	if !ok {
		return nil, errUnknown
	}
	for _, name := range allTypedFields {
		if _, zero := a.field(name); !zero && !hasField(fields, name) {
			return nil, errForeign
		}
	}
	var b bytes.Buffer
	b.WriteByte('{')
	write := func(name string, v any) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(name))
		b.WriteByte(':')
		enc, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		b.Write(enc)
	}
	tags := a.PolicyTags
	if tags == nil {
		tags = []string{}
	}
	write("id", a.ID)
	write("type", a.Type)
	write("reason", a.Reason)
	write("policyTags", tags)
	for _, f := range fields {
		ptr, zero := a.field(f.name)
		if zero && !f.required {
			continue
		}
		write(f.name, ptr)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

var (
	errUnknown = jsonTestError("unknown type")
	errForeign = jsonTestError("foreign field")
)

type jsonTestError string

func (e jsonTestError) Error() string { return string(e) }

// randomJSONText returns a string drawn to exercise every escaping rule.
func randomJSONText(r *rand.Rand) string {
	pieces := []string{"", "a", "Sign in", "\"", "\\", "<", ">", "&", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f",
		"é", "日本", "\u2028", "\u2029", "\U0001F600", "\xff", "\xe2\x80", "\xed\xa0\x80", "{{secret:PW}}", "#name", "'", "/"}
	var b []byte
	for range r.IntN(6) {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return string(b)
}

// randomAction returns an action of a random type with random fields,
// now and then one of another type or of no known type.
func randomAction(r *rand.Rand) Action {
	types := []ActionType{ActNavigate, ActClick, ActType, ActSelect, ActScroll, ActWait, ActExtract}
	a := Action{ID: randomJSONText(r), Type: types[r.IntN(len(types))], Reason: randomJSONText(r)}
	if r.IntN(8) == 0 {
		a.Type = ActionType(randomJSONText(r))
	}
	switch r.IntN(3) {
	case 0:
	case 1:
		a.PolicyTags = []string{}
	default:
		for range 1 + r.IntN(3) {
			a.PolicyTags = append(a.PolicyTags, randomJSONText(r))
		}
	}
	set := func(name string) bool {
		for _, f := range actionFields[a.Type] {
			if f.name == name {
				return r.IntN(4) != 0
			}
		}
		return r.IntN(40) == 0 // a field of another type, now and then
	}
	if set("url") {
		a.URL = randomJSONText(r)
	}
	if set("selector") {
		a.Selector = randomJSONText(r)
	}
	if set("timeoutMs") {
		a.TimeoutMs = r.IntN(100000) - 10
	}
	if set("text") {
		a.Text = randomJSONText(r)
	}
	if set("redact") {
		a.Redact = r.IntN(2) == 0
	}
	if set("value") {
		a.Value = randomJSONText(r)
	}
	if set("direction") {
		a.Direction = ScrollDirection(randomJSONText(r))
	}
	if set("amountPx") {
		a.AmountPx = r.IntN(5000) - 100
	}
	if set("durationMs") {
		a.DurationMs = r.IntN(60000)
	}
	if set("extract") {
		a.Extract = ExtractKind(randomJSONText(r))
	}
	return a
}

func TestActionMarshalAgreesWithEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	var ok, refused int
	for i := range 20000 {
		a := randomAction(r)
		got, gerr := a.MarshalJSON()
		want, werr := marshalActionGeneral(a)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("#%d %#v: MarshalJSON error %v, reference %v", i, a, gerr, werr)
		}
		if werr != nil {
			refused++
			continue
		}
		ok++
		if !bytes.Equal(got, want) {
			t.Fatalf("#%d %#v:\n got %s\nwant %s", i, a, got, want)
		}
		// Through encoding/json (which compacts a Marshaler's output), too.
		viaJSON, err := json.Marshal(a)
		if err != nil || !bytes.Equal(viaJSON, want) {
			t.Fatalf("#%d json.Marshal = %s, %v; want %s", i, viaJSON, err, want)
		}
	}
	if ok < 10000 || refused < 500 {
		t.Fatalf("only %d encoded and %d refused: the draw does not cover both", ok, refused)
	}
}

func BenchmarkActionMarshal(b *testing.B) {
	a := Action{ID: "t12", Type: ActType, Reason: "fill in the customer's name", PolicyTags: []string{}, Selector: "#name", Text: "Customer 12"}
	for _, bc := range []struct {
		name string
		f    func(Action) ([]byte, error)
	}{{"direct", Action.MarshalJSON}, {"encoding-json", marshalActionGeneral}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := bc.f(a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package evidence

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/internal/strictjson"
	"github.com/aegis-run/aegis/schemas"
)

// Tests of what FORMAT.md states beyond its worked example: each checks a
// statement of the document against the code that implements it.

// formatDoc returns FORMAT.md.
func formatDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFormatChecks: the table of checks in section 9 is the one Verify's
// errors use to name the rule they enforce.
func TestFormatChecks(t *testing.T) {
	doc := formatDoc(t)
	start := strings.Index(doc, "| Check | Rule |")
	if start < 0 {
		t.Fatal("FORMAT.md, section 9: no table of checks")
	}
	rows := strings.Split(doc[start:], "\n\n")[0]
	tick := regexp.MustCompile("`([^`]+)`")
	got := map[string]string{}
	for _, line := range strings.Split(rows, "\n")[2:] {
		cells := strings.Split(line, " | ")
		if len(cells) != 2 {
			t.Fatalf("FORMAT.md, section 9: row %q", line)
		}
		rule := strings.TrimSuffix(cells[1], " |")
		for _, m := range tick.FindAllStringSubmatch(cells[0], -1) {
			got[m[1]] = rule
		}
	}
	for check, rule := range checkRules {
		if g, ok := got[check]; !ok || !strings.HasPrefix(g, rule) {
			t.Errorf("FORMAT.md, section 9: check %q has rule %q, want %q", check, g, rule)
		}
	}
	for check, rule := range got {
		if _, ok := checkRules[check]; !ok && !strings.HasPrefix(rule, "(") {
			t.Errorf("FORMAT.md, section 9: check %q is not one Verify names", check)
		}
	}
	// An error says its rule.
	e := &VerifyError{File: FileActions, Line: 3, Entry: 8, Check: "action event", Err: ErrNoActionEvent}
	if want := "actions.jsonl line 3 (ledger entry 8): action event (FORMAT.md section 8, rule 12): "; !strings.HasPrefix(e.Error(), want) {
		t.Errorf("got %q, want it to start %q", e.Error(), want)
	}
}

// TestFormatCanonicalBounds: section 1's nesting levels, number spellings
// and document size.
func TestFormatCanonicalBounds(t *testing.T) {
	nest := func(n int) string { return strings.Repeat(`{"a":`, n-1) + "[]" + strings.Repeat("}", n-1) }
	tests := []struct {
		doc  string
		want bool
	}{
		{nest(64), true},
		{nest(65), false},
		{`[` + nest(63) + `,"x",1]`, true},
		{`[` + nest(64) + `]`, false},
		{`[1,0,1e+21,1.5e-7,-1]`, true},
		{`[1.0]`, false},
		{`[1e0]`, false},
		{`[-0]`, false},
		{`[1e21]`, false},
		{`[0.00000015]`, false},
		{"", false},
	}
	for _, tt := range tests {
		_, err := parseRec([]byte(tt.doc))
		if got := err == nil; got != tt.want {
			t.Errorf("%.40s...: canonical %v, want %v (%v)", tt.doc, got, tt.want, err)
		}
	}
	if canonjson.MaxDepth != 64 || schemas.MaxDepth != 64 || strictjson.MaxDocumentBytes != 67108864 {
		t.Error("FORMAT.md, section 1: the bounds it states are not the code's")
	}
	if doc := formatDoc(t); !strings.Contains(doc, "nests at most **64 levels**") || !strings.Contains(doc, "at most 67108864 bytes") {
		t.Error("FORMAT.md, section 1: bounds not stated")
	}
}

// TestFormatImageSizes: the sizes section 8, rule 6 reads from an image's
// header, zero and oversized ones left out.
func TestFormatImageSizes(t *testing.T) {
	png := func(w, h uint32, n int) []byte {
		b := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"), make([]byte, 17)...)
		binary.BigEndian.PutUint32(b[16:], w)
		binary.BigEndian.PutUint32(b[20:], h)
		return b[:n]
	}
	jpeg := func(w, h uint16) []byte {
		b := []byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, // APP0, length 4
			0xFF, 0xFF, // a fill byte
			0xFF, 0xC4, 0x00, 0x02, // DHT: not a frame
			0xFF, 0xC2, 0x00, 0x0B, 0x08, 0, 0, 0, 0, 0x01, 0x00}
		binary.BigEndian.PutUint16(b[19:], h)
		binary.BigEndian.PutUint16(b[21:], w)
		return b
	}
	webp := func(chunk string, body []byte) []byte {
		b := append([]byte("RIFF\x00\x00\x00\x00WEBP"+chunk), body...)
		binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-8))
		return b
	}
	vp8 := make([]byte, 14)
	copy(vp8[7:], []byte{0x9D, 0x01, 0x2A})
	binary.LittleEndian.PutUint16(vp8[10:], 640|0xC000) // the scale bits are not the size
	binary.LittleEndian.PutUint16(vp8[12:], 480)
	vp8l := make([]byte, 9)
	vp8l[4] = 0x2F
	binary.LittleEndian.PutUint32(vp8l[5:], 99|(49<<14))
	vp8x := make([]byte, 14)
	vp8x[8], vp8x[11] = 0xFF, 0x01 // width and height minus one: 256 by 2
	tests := []struct {
		name      string
		b         []byte
		ok        bool
		mime      string
		wantW, wH int
	}{
		{"png", png(4, 3, 33), true, "image/png", 4, 3},
		{"png of 32 bytes", png(4, 3, 32), false, "", 0, 0},
		{"png width 0", png(0, 3, 33), true, "image/png", 0, 0},
		{"png height 65536", png(4, 65536, 33), true, "image/png", 0, 0},
		{"png 65535", png(65535, 65535, 33), true, "image/png", 65535, 65535},
		{"jpeg", jpeg(320, 200), true, "image/jpeg", 320, 200},
		{"jpeg height 0", jpeg(320, 0), true, "image/jpeg", 0, 0},
		{"jpeg without a frame", []byte{0xFF, 0xD8, 0xFF, 0xD9}, true, "image/jpeg", 0, 0},
		{"webp VP8", webp("VP8 ", vp8), true, "image/webp", 640, 480},
		{"webp VP8 width 0", webp("VP8 ", append(vp8[:10:10], 0, 0, 1, 0)), true, "image/webp", 0, 0},
		{"webp VP8 without start code", webp("VP8 ", make([]byte, 14)), true, "image/webp", 0, 0},
		{"webp VP8L", webp("VP8L", vp8l), true, "image/webp", 100, 50},
		{"webp VP8X", webp("VP8X", vp8x), true, "image/webp", 256, 2},
		{"webp other chunk", webp("ALPH", make([]byte, 14)), false, "", 0, 0},
		{"webp bad RIFF size", append(webp("VP8X", vp8x), 0), false, "", 0, 0},
	}
	for _, tt := range tests {
		info, ok := sniffImage(tt.b)
		if ok != tt.ok || info.mime != tt.mime || info.width != tt.wantW || info.height != tt.wH {
			t.Errorf("%s: got %v %q %dx%d, want %v %q %dx%d", tt.name, ok, info.mime, info.width, info.height, tt.ok, tt.mime, tt.wantW, tt.wH)
		}
	}
}

// TestFormatProofFile: section 11's form of the proof file: any spelling
// of one object of exactly the proof's members.
func TestFormatProofFile(t *testing.T) {
	p, err := Prove(context.Background(), filepath.Join(exampleDir, testSession), "8", true)
	if err != nil {
		t.Fatal(err)
	}
	indented, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	canon, err := canonjson.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal(canon, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name string
		file string
		ok   bool
	}{
		{"as aegis prove writes it", string(indented) + "\n", true},
		{"canonical", string(canon), true},
		{"without content", edit(func(m map[string]any) { delete(m, "content") }), true},
		{"data after it", string(canon) + "{}", false},
		{"a member twice", `{"format":"x",` + string(canon[1:]), false},
		{"a member in another case", strings.Replace(string(canon), `"treeSize"`, `"TreeSize"`, 1), false},
		{"an unknown member", edit(func(m map[string]any) { m["note"] = "x" }), false},
		{"a required member missing", edit(func(m map[string]any) { delete(m, "path") }), false},
		{"a null member", edit(func(m map[string]any) { m["envelope"] = nil }), false},
		{"another format", edit(func(m map[string]any) { m["format"] = "aegis-inclusion-proof/2" }), false},
		{"an entry member in another case", edit(func(m map[string]any) {
			e := m["entry"].(map[string]any)
			e["Index"] = e["index"]
			delete(e, "index")
		}), false},
		{"an entry with line 0", edit(func(m map[string]any) { m["entry"].(map[string]any)["line"] = 0 }), false},
		{"not an object", `[]`, false},
	}
	// A manifest nested as deep as canonical JSON allows (64 levels) is
	// one level deeper in the proof, and still read.
	deep := edit(func(m map[string]any) {
		var hints any = map[string]any{}
		for i := 0; i < 61; i++ {
			hints = map[string]any{"a": hints}
		}
		m["manifest"].(map[string]any)["task"].(map[string]any)["hints"] = hints
	})
	var manifest struct{ Manifest json.RawMessage }
	if err := json.Unmarshal([]byte(deep), &manifest); err != nil {
		t.Fatal(err)
	}
	if _, err := canonjson.Transform(manifest.Manifest); err != nil {
		t.Fatalf("the deep manifest is not canonical JSON: %v", err)
	}
	if _, err := canonjson.Transform([]byte(deep)); err == nil {
		t.Fatal("the proof of the deep manifest is not deeper than canonical JSON allows")
	}
	if _, err := ParseProof([]byte(deep)); err != nil {
		t.Errorf("a proof of a manifest nested 64 levels: %v", err)
	}
	for _, tt := range tests {
		q, err := ParseProof([]byte(tt.file))
		if err == nil {
			_, err = VerifyProof(q, testPub())
		}
		if got := err == nil; got != tt.ok {
			t.Errorf("%s: valid %v, want %v (%v)", tt.name, got, tt.ok, err)
		}
	}
}

// TestFormatEnumerations: the enumerations section 4 states in prose are
// those of the schemas.
func TestFormatEnumerations(t *testing.T) {
	doc := formatDoc(t)
	sec := doc[strings.Index(doc, "\n## 4. Records"):strings.Index(doc, "\n## 5. The ledger")]
	sec = strings.Join(strings.Fields(sec), " ")
	tests := []struct {
		schema, pointer string // the enum
		phrase          string // the prose that lists it, up to the values
	}{
		{"evidence-manifest", "/properties/formatVersion/enum", "is required and is one of"},
		{"evidence-manifest", "/properties/status/enum", "`status` is"},
		{"evidence-manifest", "/properties/driver/enum", "`driver` is"},
		{"decision-record", "/properties/result/enum", "`result` is"},
		{"governance", "/definitions/ComputerUseActionRiskLevel/enum", "`risk` is"},
		{"decision-record", "/properties/permission/enum", "when present is"},
		{"decision-record", "/properties/policySource/enum", "`policySource` is"},
		{"decision-record", "/$defs/exception/properties/status/enum", "exception's `status` is"},
		{"browser-action", "/$defs/actionType/enum", "The action's `type` is"},
		{"tool-result", "/properties/error/properties/code/enum", "whose `code` is"},
		{"computer-use", "/$defs/ComputerUseStreamEvent/properties/type/enum", "`#/$defs/ComputerUseStreamEvent`). `type` is"},
		{"computer-use", "/$defs/SessionEndedEvent/properties/status/enum", "event's `status` is"},
		{"computer-use", "/$defs/ApprovalDecision/enum", "event's `decision` is"},
		{"model-call", "/properties/purpose/enum", "`purpose` is"},
		{"model-call", "/properties/mode/enum", "its `mode`"},
		{"browser-observation", "/$defs/artifact/properties/type/enum", "artifact's `type` is"},
		{"image-artifact", "/properties/mimeType/enum", "`mimeType` is"},
	}
	tick := regexp.MustCompile("^`([^`]+)`(, | or |; |: |\\)|\\.| with| and| \\()")
	for _, tt := range tests {
		raw, err := fs.ReadFile(schemas.FS(), tt.schema+".schema.json")
		if err != nil {
			t.Fatal(err)
		}
		var tree any
		if err := json.Unmarshal(raw, &tree); err != nil {
			t.Fatal(err)
		}
		v := tree
		for _, k := range strings.Split(tt.pointer, "/")[1:] {
			v = v.(map[string]any)[k]
		}
		var want []string
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				want = append(want, fmt.Sprint(e))
			}
		default:
			want = []string{fmt.Sprint(x)}
		}
		i := strings.Index(sec, tt.phrase)
		if i < 0 {
			t.Errorf("FORMAT.md, section 4: %q not found", tt.phrase)
			continue
		}
		// The values listed right after the phrase, up to the first
		// that is not followed by a list separator.
		rest := strings.TrimPrefix(sec[i+len(tt.phrase):], " ")
		var got []string
		// The manifest's status: running, then the final ones.
		rest = strings.TrimPrefix(rest, "`running` while the session runs, then one of ")
		rest = strings.TrimPrefix(rest, "one of ")
		for {
			m := tick.FindStringSubmatch(rest)
			if m == nil {
				break
			}
			got = append(got, m[1])
			rest = strings.TrimPrefix(rest[len(m[0]):], " ")
			if m[2] != ", " && m[2] != " or " {
				break
			}
		}
		if tt.pointer == "/properties/status/enum" && tt.schema == "evidence-manifest" {
			got = append(got, "running")
		}
		sort.Strings(got)
		sort.Strings(want)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("FORMAT.md, section 4, %s %s: lists %v, the schema %v", tt.schema, tt.pointer, got, want)
		}
	}
	if !bytes.Contains([]byte(doc), []byte("`formatVersion` `aegis-evidence/2`")) {
		t.Error("FORMAT.md, section 6: formatVersion not stated")
	}
}

package extension

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestObserverScript(t *testing.T) {
	tests := []struct {
		name    string
		global  string
		wantErr bool
	}{
		{"default", DefaultGlobal, false},
		{"random", "__aegis_0123abcd", false},
		{"dollar", "$x", false},
		{"empty", "", true},
		{"quote", `x");alert(1);("`, true},
		{"dot", "a.b", true},
		{"digit first", "1abc", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ObserverScript(tt.global)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ObserverScript(%q) error = %v, wantErr %v", tt.global, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			want := `})(globalThis, "` + tt.global + `");`
			if !strings.HasSuffix(strings.TrimSpace(got), want) {
				t.Errorf("script does not end with %q", want)
			}
			if len(got) != len(Observer())-len(DefaultGlobal)+len(tt.global) {
				t.Errorf("script length %d, want only the install call changed", len(got))
			}
		})
	}
}

func TestObserverEndsWithInstallCall(t *testing.T) {
	if got := strings.Count(Observer(), installCall); got != 1 {
		t.Fatalf("the observer holds the install call %d times, want 1", got)
	}
	if !strings.HasSuffix(strings.TrimSpace(Observer()), installCall) {
		t.Fatal("the observer must end with the install call")
	}
}

// readParts reads the observer's parts from this directory, in order.
func readParts(t *testing.T) []string {
	t.Helper()
	parts := make([]string, len(observerParts))
	for i, name := range observerParts {
		b, err := os.ReadFile(filepath.Join("observer", name))
		if err != nil {
			t.Fatal(err)
		}
		parts[i] = string(b)
	}
	return parts
}

// opener is how head.js opens the observer's function.
const opener = "(function (root, name) {\n  'use strict';\n"

// TestObserverParts: the observer is its parts, every file of observer/
// once, joined in order; head.js alone opens the function, api.js alone
// closes it, and no two parts declare the same name.
func TestObserverParts(t *testing.T) {
	entries, err := os.ReadDir("observer")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := slices.Sorted(slices.Values(observerParts))
	if !slices.Equal(got, want) {
		t.Fatalf("observer/ holds %v, observerParts lists %v", got, want)
	}
	parts := readParts(t)
	if got, want := Observer(), strings.Join(parts, "\n"); got != want {
		t.Fatalf("Observer() is not the parts joined in order (%d bytes, want %d)", len(got), len(want))
	}
	declared := map[string]string{}
	decl := regexp.MustCompile(`(?m)^  (?:async function|function|const|let|class) ([A-Za-z_$][\w$]*)`)
	last := len(parts) - 1
	for i, p := range parts {
		name := observerParts[i]
		if strings.TrimSpace(p) == "" || !strings.HasSuffix(p, "\n") || strings.HasPrefix(p, "\n") {
			t.Errorf("%s: empty, or not whole lines without a blank first line", name)
		}
		if got, want := strings.Count(p, "(function (root, name) {"), btoi(i == 0); got != want {
			t.Errorf("%s opens the observer's function %d times, want %d", name, got, want)
		}
		if got, want := strings.Count(p, "})(globalThis"), btoi(i == last); got != want {
			t.Errorf("%s closes the observer's function %d times, want %d", name, got, want)
		}
		for _, m := range decl.FindAllStringSubmatch(p, -1) {
			if other, ok := declared[m[1]]; ok {
				t.Errorf("%s declares %s, which %s declares too", name, m[1], other)
			}
			declared[m[1]] = name
		}
	}
	if !strings.HasPrefix(parts[0], "// ") || !strings.Contains(parts[0], opener) {
		t.Errorf("head.js must start with the header comment and open the function with %q", opener)
	}
	if !strings.HasSuffix(parts[last], installCall+"\n") {
		t.Errorf("api.js must end with %q", installCall)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// partsCheck compiles each part inside the observer's function (without
// running it), then runs the whole observer in a fresh context and lists
// the globals it added and the API's members.
const partsCheck = `
const vm = require('vm');
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const errors = [];
for (const p of input.parts) {
  try { new vm.Script(p.src, { filename: p.name }); } catch (e) { errors.push(p.name + ': ' + e.message); }
}
let globals = [], api = [];
try {
  const ctx = vm.createContext({});
  const before = new Set(vm.runInContext('Object.getOwnPropertyNames(globalThis)', ctx));
  vm.runInContext(input.observer, ctx);
  globals = vm.runInContext('Object.getOwnPropertyNames(globalThis)', ctx).filter((n) => !before.has(n));
  api = vm.runInContext('Object.keys(globalThis[' + JSON.stringify(input.global) + '])', ctx);
} catch (e) { errors.push('the observer: ' + e.message); }
process.stdout.write(JSON.stringify({ errors, globals, api }));
`

// TestObserverPartsWrapped: each part is whole statements of the
// observer's function (it compiles there alone), and the observer adds
// one global, its API, and nothing else.
func TestObserverPartsWrapped(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node")
	}
	type part struct {
		Name string `json:"name"`
		Src  string `json:"src"`
	}
	var in struct {
		Parts    []part `json:"parts"`
		Observer string `json:"observer"`
		Global   string `json:"global"`
	}
	parts := readParts(t)
	for i, p := range parts {
		if i > 0 {
			p = opener + p
		}
		if i < len(parts)-1 {
			p += "\n" + installCall + "\n"
		}
		in.Parts = append(in.Parts, part{observerParts[i], p})
	}
	in.Global = "__aegis_test"
	if in.Observer, err = ObserverScript(in.Global); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "-e", partsCheck)
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got struct {
		Errors  []string `json:"errors"`
		Globals []string `json:"globals"`
		API     []string `json:"api"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, e := range got.Errors {
		t.Errorf("not whole statements of the observer's function: %s", e)
	}
	if want := []string{in.Global}; !slices.Equal(got.Globals, want) {
		t.Errorf("the observer added the globals %v, want %v", got.Globals, want)
	}
	wantAPI := []string{"version", "observe", "observePacked", "describe", "prepareClick", "finishClick", "onTop", "prepareType",
		"setValue", "select", "scroll", "extract", "rect", "split", "hasClickListener", "deepHit", "deepActive",
		"check", "checkFocus", "maskRects", "typed", "invoke"}
	if !slices.Equal(got.API, wantAPI) {
		t.Errorf("the API is %v, want %v", got.API, wantAPI)
	}
}

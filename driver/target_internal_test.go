package driver

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
)

func TestTargetChangedFromTheObserver(t *testing.T) {
	_, err := parseResult([]byte(`{"ok":false,"code":"target_changed","msg":"the element changed since it was described (label)","final":true,"changed":["label"]}`), "#go")
	if !errors.Is(err, ErrTargetChanged) {
		t.Fatalf("err = %v, want target_changed", err)
	}
	var e *Error
	if !errors.As(err, &e) || !e.final || e.Selector != "#go" {
		t.Errorf("err = %#v, want a final error for #go", err)
	}
	if got := e.ToolError().Code; got != contract.CodeTargetChanged {
		t.Errorf("tool error code = %q", got)
	}
}

func TestTargetMemory(t *testing.T) {
	var m targetMemory
	for i := range maxDescribed + 10 {
		m.remember(fmt.Sprintf("#e%d", i), described{el: contract.Element{Tag: "button", ID: fmt.Sprint(i)}})
	}
	m.remember("#e20", described{el: contract.Element{Tag: "a"}})
	if _, ok := m.recall("#e0"); ok {
		t.Error("the oldest selector is still remembered")
	}
	if d, ok := m.recall("#e20"); !ok || d.el.Tag != "a" {
		t.Errorf("#e20 = %+v, %v; want the last description", d, ok)
	}
	if len(m.m) != maxDescribed || len(m.order) != maxDescribed {
		t.Errorf("remembers %d (%d in order), want %d", len(m.m), len(m.order), maxDescribed)
	}
}

func TestPageURLOrigin(t *testing.T) {
	tests := []struct{ url, want string }{
		{"http://127.0.0.1:8080/a?b#c", "http://127.0.0.1:8080"},
		{"HTTPS://Shop.Example:443/x", "https://shop.example"},
		{"about:blank", "about:blank"},
		{"data:text/html,x", "data:text/html,x"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := pageURLOrigin(tt.url); got != tt.want {
			t.Errorf("pageURLOrigin(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

func TestDescribedElementBoundsOrigin(t *testing.T) {
	got, err := describedElement("#x", contract.Element{Tag: "button", Origin: "http://" + strings.Repeat("é", 600)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(got.Origin); n != contract.MaxElementOrigin {
		t.Errorf("origin of %d characters, want %d", n, contract.MaxElementOrigin)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}
}

// Package drivertest is the conformance suite every aegis driver must pass.
// It drives the demo site (package demosite) through the driver.Driver
// interface only, checks the page's resulting state through observations,
// and checks every typed error, the ToolResults against their schema, and
// that no typed password ever appears in an observation.
//
// A driver's test runs the suite with an Opener:
//
//	func TestConformance(t *testing.T) {
//		drivertest.Run(t, func(t *testing.T, site string) driver.Driver {
//			d, err := driver.Open(ctx, driver.Config{Mode: contract.ModeSandbox, AllowedOrigins: []string{site}})
//			...
//			return d
//		})
//	}
package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/aegis-run/aegis/demosite"
	"github.com/aegis-run/aegis/driver"
)

// Opener opens a fresh driver session for one test, on a blank page. site
// is the demo site's origin (such as "http://127.0.0.1:41234"): a driver
// with an allowlist must allow it. The suite closes the driver.
type Opener func(t *testing.T, site string) driver.Driver

// Secret is the password the suite types; it must never appear in an
// observation, an artifact, a ToolResult or an error.
const Secret = "Zq9-s3cr3t-PA55-w0rd"

// CardNumber is typed into a field named sensitive by a selector.
const CardNumber = "4111-1111-1111-1111"

// test is one conformance test.
type test struct {
	name string
	core bool // part of RunCore
	run  func(t *testing.T, e *env)
}

// env is what a test gets: its driver and the site.
type env struct {
	d    driver.Driver
	site string
	seq  int
}

// Run runs the whole conformance suite, each test on a fresh driver.
func Run(t *testing.T, open Opener) { run(t, open, false) }

// RunCore runs the core of the suite (observe, type, click, masking, one
// typed error, a screenshot): enough to prove a transport, such as a remote
// browser, without repeating everything.
func RunCore(t *testing.T, open Opener) { run(t, open, true) }

func run(t *testing.T, open Opener, coreOnly bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	site, err := demosite.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatalf("start demo site: %v", err)
	}
	defer func() {
		cancel()
		<-site.Done()
	}()
	for _, tc := range tests {
		if coreOnly && !tc.core {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			d := open(t, site.URL())
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = d.Close(ctx)
			})
			tc.run(t, &env{d: d, site: site.URL()})
		})
	}
}

var tests = []test{
	{"Observe", true, testObserve},
	{"TypeAndClickSignIn", true, testSignIn},
	{"PasswordNeverObserved", true, testMasking},
	{"SensitiveSelectorMasked", false, testSensitiveSelector},
	{"TypeClearsFirst", false, testTypeClears},
	{"SelectAndCheckbox", false, testSelect},
	{"SelectMissingOption", false, testSelectMissing},
	{"Scroll", false, testScroll},
	{"Wait", false, testWait},
	{"ExtractText", false, testExtractText},
	{"ExtractTable", false, testExtractTable},
	{"ExtractLinks", false, testExtractLinks},
	{"ExtractScreenshot", true, testScreenshot},
	{"ShadowDOM", false, testShadow},
	{"SameOriginFrame", false, testFrame},
	{"ScriptClickables", false, testClickables},
	{"LateElement", false, testLate},
	{"Describe", false, testDescribe},
	{"HostilePage", false, testHostile},
	{"ErrElementNotFound", true, testNotFound},
	{"ErrAmbiguousSelector", false, testAmbiguous},
	{"ErrNotInteractable", false, testNotInteractable},
	{"ErrTimeout", false, testTimeout},
	{"ErrNavigationBlocked", false, testNavigateSchemes},
	{"ErrPageClosed", false, testPageClosed},
	{"ErrUnsupported", false, testUnsupported},
}

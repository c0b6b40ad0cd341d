package nativehost

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// OriginPrefix starts the origin Chrome passes a native host as its first
// argument: "chrome-extension://ID/".
const OriginPrefix = "chrome-extension://"

// IsOriginArg reports whether arg is what Chrome passes a host it starts
// (the caller's origin), which makes aegis enter host mode.
func IsOriginArg(arg string) bool { return strings.HasPrefix(arg, OriginPrefix) }

// ParseOrigin checks that origin is exactly "chrome-extension://ID/" with a
// valid extension ID, and returns the ID.
func ParseOrigin(origin string) (string, error) {
	id, ok := strings.CutPrefix(origin, OriginPrefix)
	if ok {
		id, ok = strings.CutSuffix(id, "/")
	}
	if !ok || !ValidExtensionID(id) {
		return "", errorf(CodeOriginRefused, "%q is not an extension origin (chrome-extension://ID/)", bound(origin, 100))
	}
	return id, nil
}

// sameFile reports whether two paths name the same file once symbolic
// links are resolved (case-insensitively on Windows and macOS).
func sameFile(a, b string) bool {
	ra, err := filepath.EvalSymlinks(a)
	if err != nil {
		return false
	}
	rb, err := filepath.EvalSymlinks(b)
	if err != nil {
		return false
	}
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" {
		return strings.EqualFold(ra, rb)
	}
	return ra == rb
}

// AllowedOrigins returns the allowed_origins of every aegis host manifest
// among paths whose path names exe (the running host), and the manifests
// that counted. A manifest of another program, or of another aegis
// executable, does not count: the installed manifest is the one that
// points at this host.
func AllowedOrigins(exe string, paths []string) (origins, manifests []string) {
	seen := map[string]bool{}
	for _, p := range paths {
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		m, err := ReadManifest(p)
		if err != nil || m.Name != HostName || m.Type != "stdio" || !sameFile(m.Path, exe) {
			continue
		}
		manifests = append(manifests, p)
		for _, o := range m.AllowedOrigins {
			if _, err := ParseOrigin(o); err == nil && !slices.Contains(origins, o) {
				origins = append(origins, o)
			}
		}
	}
	return origins, manifests
}

// CheckOrigin returns nil when origin is in the allowed_origins of an
// installed manifest of this host (exe) among paths, else an *Error with
// CodeOriginRefused. Chrome checks allowed_origins itself before starting
// the host; this check holds when something else starts it with a forged
// origin argument, or when another manifest names this executable.
func CheckOrigin(origin, exe string, paths []string) error {
	if _, err := ParseOrigin(origin); err != nil {
		return err
	}
	allowed, manifests := AllowedOrigins(exe, paths)
	if len(manifests) == 0 {
		return errorf(CodeOriginRefused, "no installed host manifest points at %s (run aegis install)", exe)
	}
	if !slices.Contains(allowed, origin) {
		return errorf(CodeOriginRefused, "origin %s is not in the allowed_origins of %s", origin, strings.Join(manifests, ", "))
	}
	return nil
}

// ManifestSearchPath returns the manifests the origin check reads: those
// the configuration lists (written by aegis install --dir, such as a
// browser profile's), then the browsers' usual locations.
func ManifestSearchPath(c Config) []string {
	return append(append([]string(nil), c.Manifests...), KnownManifestPaths()...)
}

// describeOrigins is for log lines.
func describeOrigins(o []string) string {
	if len(o) == 0 {
		return "(none)"
	}
	return fmt.Sprint(o)
}

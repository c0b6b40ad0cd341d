package cli

import "os"

// isTerminal reports whether v (a reader or writer of Stdio) is an
// interactive terminal: a person can answer on it, or reads it. A
// character device that is not one (/dev/null, which a service or a CI
// job gives as stdin) is not.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok || f == nil {
		return false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	return isTTY(f)
}

package suite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// TaskFile is a task file of a suite, as Files found it.
type TaskFile struct {
	// Name names the task in the index: the path as given, or for a file
	// found in a directory, its name relative to that directory.
	Name string
	// Path is where to read it.
	Path string
}

// ErrNoTasks is the error of Files when the arguments name no task.
var ErrNoTasks = errors.New("suite: no tasks")

// Files lists the task files args name, in order: a file is itself, a
// directory its *.json files sorted by name (not its subdirectories').
func Files(args []string) ([]TaskFile, error) {
	var files []TaskFile
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("suite: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, TaskFile{Name: a, Path: a})
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, fmt.Errorf("suite: %w", err)
		}
		var names []string
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
				names = append(names, e.Name())
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("%w: %s holds no *.json file", ErrNoTasks, a)
		}
		sort.Strings(names)
		for _, n := range names {
			files = append(files, TaskFile{Name: n, Path: filepath.Join(a, n)})
		}
	}
	if len(files) == 0 {
		return nil, ErrNoTasks
	}
	return files, nil
}

// slugs returns, for each task name, the directory its bundles go to
// under the suite's: the file's base name without .json, in letters,
// digits, '.', '_' and '-' (others become '_'), made unique by a "-N"
// suffix.
func slugs(names []string) []string {
	out := make([]string, len(names))
	seen := map[string]bool{}
	for i, n := range names {
		base := strings.TrimSuffix(filepath.Base(filepath.FromSlash(n)), ".json")
		b := []byte(base)
		for j, c := range b {
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
			if !ok {
				b[j] = '_'
			}
		}
		base = strings.TrimLeft(string(b), ".")
		if base == "" {
			base = "task"
		}
		s := base
		for k := 2; seen[s]; k++ {
			s = fmt.Sprintf("%s-%d", base, k)
		}
		seen[s] = true
		out[i] = s
	}
	return out
}

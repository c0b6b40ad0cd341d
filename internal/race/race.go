//go:build race

// Package race reports whether the race detector is on, so that tests
// whose cost is pure computation (agreement over thousands of generated
// inputs, which the race detector slows several times and has nothing to
// find in) can leave that run to `make test`'s run without it.
package race

// Enabled is true: this binary was built with -race.
const Enabled = true

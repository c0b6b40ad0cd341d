package gate

import "testing"

// TestCapped: entries stay until the map is full; the put that finds it
// full empties it and keeps only the new entry.
func TestCapped(t *testing.T) {
	var c capped[int, string]
	if _, ok := c.get(1); ok {
		t.Fatal("an empty map has an entry")
	}
	for i := 0; i < 3; i++ {
		c.put(i, "v", 3)
	}
	for i := 0; i < 3; i++ {
		if got, ok := c.get(i); !ok || got != "v" {
			t.Fatalf("get(%d) = %q, %v; want \"v\", true", i, got, ok)
		}
	}
	c.put(3, "w", 3)
	tests := []struct {
		key  int
		want bool
	}{{0, false}, {1, false}, {2, false}, {3, true}}
	for _, tt := range tests {
		if _, got := c.get(tt.key); got != tt.want {
			t.Errorf("after the put into a full map, get(%d) found %v, want %v", tt.key, got, tt.want)
		}
	}
}

package nearest

import (
	"slices"
	"testing"
)

func TestTypoFindsAMisspelledName(t *testing.T) {
	flags := []string{"seed", "steps", "stop-at-first", "jobs", "allow-damaged", "json"}
	for want, typed := range map[string]string{
		"seed": "sed", "steps": "stpes", "stop-at-first": "stop-at-frist", "jobs": "job",
		"allow-damaged": "allow", // the only flag it begins
		"":              "xyzzy", // nothing near
	} {
		if got := Typo(flags, typed); got != want {
			t.Errorf("Typo(%q) = %q, want %q", typed, got, want)
		}
	}
	// Two flags begin "st" and "sto": neither is guessed from a prefix.
	if got := Typo([]string{"stop-at-first", "stop-after"}, "sto"); got != "" {
		t.Errorf("Typo(sto) = %q, want no guess between two flags it begins", got)
	}
}

func TestNamesOrdersContainingThenNear(t *testing.T) {
	names := []string{"n10", "n2", "Agent.AcceptedValue", "Agent.AcceptedRound", "Agent.Promised", "N"}
	if got := Names(names, "acceptedvalu", 2); !slices.Equal(got, []string{"Agent.AcceptedValue", "Agent.AcceptedRound"}) {
		t.Errorf("Names(acceptedvalu) = %v", got)
	}
	if got := Names([]string{"n10", "n9", "n2"}, "n", 3); !slices.Equal(got, []string{"n2", "n9", "n10"}) {
		t.Errorf("Names(n) = %v, want natural order among equals", got)
	}
	if got := Names(names, "Agent.Promissed", 1); !slices.Equal(got, []string{"Agent.Promised"}) {
		t.Errorf("Names(Agent.Promissed) = %v", got)
	}
}

func TestNamesFindsAPathThatWentTooDeep(t *testing.T) {
	if got := Names([]string{"Agent.Promised", "Agent.AcceptedRound"}, "Agent.Promised.Round", 1); !slices.Equal(got, []string{"Agent.Promised"}) {
		t.Errorf("Names(Agent.Promised.Round) = %v", got)
	}
}

// replay why's suggestions for a field: a partial path, a typo.
func TestNamesFindsWhyFields(t *testing.T) {
	names := []string{"Agent.Promised", "Agent.AcceptedRound", "Agent.AcceptedValue", "Leader.Round", "N"}
	if got := Names(names, "AcceptedValu", 2); !slices.Equal(got, []string{"Agent.AcceptedValue", "Agent.AcceptedRound"}) {
		t.Fatalf("partial path: %v", got)
	}
	if got := Names(names, "Agent.Promissed", 1); !slices.Equal(got, []string{"Agent.Promised"}) {
		t.Fatalf("typo: %v", got)
	}
}

// An index past a list's end is answered with the list's indexes, not
// with elements whose paths look alike (Done[99].Ver for Done[999].Ver).
func TestIndexHint(t *testing.T) {
	names := []string{"Done[0].Ver", "Done[1].Ver", "Done[385].Ver", "Logs[2][0]", "Logs[2][1]", "Store[\"k1\"].Ver", "Store[\"a[1]\"].Log[0]", "Store[\"a[1]\"].Log[1]"}
	for _, tc := range []struct{ want, hint string }{
		{"Done[999].Ver", "Done has indexes 0..385"},
		{"Done[1].Vers", ""},                       // the index is there: a misspelt field
		{"Logs[2][7]", "Logs[2] has indexes 0..1"}, // the inner list
		{"Logs[5][0]", "Logs has indexes 2..2"},
		{"Store[\"k9\"].Ver", ""},                                          // not an index
		{"Store[\"a[1]\"].Log[4]", "Store[\"a[1]\"].Log has indexes 0..1"}, // brackets inside a key
		{"Nothing[3]", ""},
	} {
		if got := IndexHint(names, tc.want); got != tc.hint {
			t.Errorf("IndexHint(%q) = %q, want %q", tc.want, got, tc.hint)
		}
	}
}

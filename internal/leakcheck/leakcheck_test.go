package leakcheck

import (
	"strings"
	"testing"
	"time"
)

// fakeM is a test run that returns code and may start a goroutine that
// stays blocked until release is closed.
type fakeM struct {
	code    int
	leak    bool
	release chan struct{}
}

func (m *fakeM) Run() int {
	if m.leak {
		go func() { <-m.release }()
	}
	return m.code
}

func TestRun(t *testing.T) {
	tests := []struct {
		name     string
		m        *fakeM
		want     int
		wantLeak bool
	}{
		{name: "passing, no leak", m: &fakeM{}, want: 0},
		{name: "failing", m: &fakeM{code: 3}, want: 3},
		{name: "passing with a leak", m: &fakeM{leak: true}, want: 1, wantLeak: true},
		{name: "failing with a leak: the failure's code", m: &fakeM{code: 2, leak: true}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.m.release = make(chan struct{})
			defer close(tt.m.release)
			var out strings.Builder
			got := run(tt.m, &out, 3, time.Millisecond)
			if got != tt.want {
				t.Errorf("run() = %d, want %d; output:\n%s", got, tt.want, out.String())
			}
			leakReported := strings.Contains(out.String(), "leakcheck.(*fakeM).Run")
			if leakReported != tt.wantLeak {
				t.Errorf("leak reported = %v, want %v; output:\n%s", leakReported, tt.wantLeak, out.String())
			}
		})
	}
}

// TestRunWithTeardown: teardown runs after the tests and before the check,
// so what it stops is not reported; it runs after failing tests too.
func TestRunWithTeardown(t *testing.T) {
	for _, code := range []int{0, 3} {
		m := &fakeM{code: code, leak: true, release: make(chan struct{})}
		tornDown := false
		var out strings.Builder
		got := run(withTeardown{m: m, teardown: func() { tornDown = true; close(m.release) }}, &out, 100, 10*time.Millisecond)
		if got != code || !tornDown {
			t.Errorf("code %d: run() = %d, teardown ran: %v; want %d, true; output:\n%s", code, got, tornDown, code, out.String())
		}
	}
}

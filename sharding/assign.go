package sharding

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// maxReleases bounds the releases a membership remembers.
const maxReleases = 64

// formatHeld writes a held range as HeldAnnotation holds it.
func formatHeld(r Range) string {
	return hexBound(r.Start, false) + "-" + hexBound(r.End, true)
}

// parseHeld reads HeldAnnotation; false for a value that is not a range.
func parseHeld(s string) (Range, bool) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return Range{}, false
	}
	start, err := strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64)
	if err != nil {
		return Range{}, false
	}
	var end uint64
	if b != "0x10000000000000000" {
		end, err = strconv.ParseUint(strings.TrimPrefix(b, "0x"), 16, 64)
		if err != nil || end == 0 {
			return Range{}, false
		}
	}
	return Range{Start: start, End: end}, true
}

// memberOf reads a Lease of the group: its member, and whether it is live
// at now. Leases of another holder format are skipped.
func memberOf(l *coordinationv1.Lease, now time.Time) (Member, bool) {
	if l.Spec.HolderIdentity == nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return Member{}, false
	}
	m := Member{Identity: *l.Spec.HolderIdentity, Weight: 1,
		Expires: l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)}
	if w, err := strconv.Atoi(l.Annotations[WeightAnnotation]); err == nil && w > 0 {
		m.Weight = w
	}
	if h, ok := l.Annotations[HeldAnnotation]; ok {
		if r, ok := parseHeld(h); ok {
			m.Held = &r
		}
	}
	return m, now.Before(m.Expires)
}

// recompute rebuilds the assignment from the Lease cache at now, records
// the releases it sees, notifies on a change, and returns when it should
// run again at the latest (the next expiry).
func (m *Membership) recompute(now time.Time) time.Time {
	next := now.Add(m.opts.LeaseDuration)
	type seen struct {
		m    Member
		live bool
		rel  time.Time // ReleasedAtAnnotation
	}
	all := map[string]seen{}
	for _, l := range m.inf.Store().List() {
		mem, live := memberOf(l, now)
		if mem.Identity == "" || mem.Identity == m.opts.Identity {
			continue
		}
		var rel time.Time
		if s, ok := l.Annotations[ReleasedAtAnnotation]; ok {
			rel, _ = time.Parse(time.RFC3339Nano, s)
		}
		all[mem.Identity] = seen{m: mem, live: live, rel: rel}
		if live && mem.Expires.Before(next) {
			next = mem.Expires
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	// Releases: a held range seen before that is no longer held.
	for id, was := range m.seenHeld {
		s, ok := all[id]
		var at time.Time
		switch {
		case !ok:
			at = now // deleted
		case !s.live:
			at = s.m.Expires
		case s.m.Held == nil || *s.m.Held != was:
			at = s.rel
			if at.IsZero() || at.After(now) {
				at = now
			}
		default:
			continue
		}
		delete(m.seenHeld, id)
		m.releases = append(m.releases, release{identity: id, r: was, at: at})
		if len(m.releases) > maxReleases {
			m.releases = m.releases[len(m.releases)-maxReleases:]
		}
	}
	var members []Member
	for id, s := range all {
		if !s.live {
			continue
		}
		if s.m.Held != nil {
			m.seenHeld[id] = *s.m.Held
		}
		members = append(members, s.m)
	}
	selfLive := !m.renewedAt.IsZero() && now.Before(m.renewedAt.Add(m.opts.LeaseDuration))
	if selfLive {
		exp := m.renewedAt.Add(m.opts.LeaseDuration)
		members = append(members, Member{Identity: m.opts.Identity, Weight: m.opts.Weight, Held: m.held, Expires: exp})
		if exp.Before(next) {
			next = exp
		}
	}
	sortMembers(members)
	view := Assignment{Members: members, Self: -1}
	if len(members) > 0 {
		ws := make([]int, len(members))
		for i, mem := range members {
			ws[i] = mem.Weight
		}
		rs, err := Split(ws...)
		if err == nil {
			for i := range members {
				members[i].Range = rs[i]
				if members[i].Identity == m.opts.Identity {
					view.Self = i
				}
			}
		}
	}
	if sum := summarize(view); sum != m.summary {
		m.summary = sum
		close(m.changed)
		m.changed = make(chan struct{})
	}
	m.view = view
	return next
}

// summarize is what a change of the assignment is told by: members,
// weights, held ranges and self.
func summarize(a Assignment) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d|", a.Self)
	for _, mem := range a.Members {
		fmt.Fprintf(&b, "%s/%d/", mem.Identity, mem.Weight)
		if mem.Held != nil {
			b.WriteString(formatHeld(*mem.Held))
		}
		b.WriteByte(';')
	}
	return b.String()
}

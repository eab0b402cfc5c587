// Package shardtest checks what the replicas of a sharded informer handled
// against the rule of package sharding: no object is handled by a replica
// that no longer owns it.
package shardtest

import (
	"fmt"
	"strconv"
	"sync"

	"github.com/typedinformer/informer/cache"
)

// Call is one handler call of a replica: the object and its version, and
// whether it was the deletion that says the object moved out.
type Call struct {
	Replica  string
	Key      cache.Key
	RV       int
	MovedOut bool
}

func (c Call) String() string {
	return fmt.Sprintf("%s: %v@%d moved=%v", c.Replica, c.Key, c.RV, c.MovedOut)
}

// Calls records the handler calls of every replica, in the order made
// (replicas in other processes: ordered by a clock they share).
type Calls struct {
	mu  sync.Mutex
	all []Call
}

// Add records a call; rv is the object's resourceVersion, which must be an
// integer (as etcd's and the fakes' are).
func (c *Calls) Add(replica string, key cache.Key, rv string, movedOut bool) {
	n, _ := strconv.Atoi(rv)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, Call{Replica: replica, Key: key, RV: n, MovedOut: movedOut})
}

// AddCall records a call.
func (c *Calls) AddCall(call Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, call)
}

// Len returns the number of calls recorded.
func (c *Calls) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.all)
}

// Stale returns the calls made by a replica that no longer owned the
// object: after another replica took it over and handled it at a later
// version, or at the same version while the first still held it (it never
// said the object moved out). A moved-out deletion is the notice that a
// replica gave the object up, and is not one; neither is the first call
// of a replica that takes an object over from one that crashed.
func (c *Calls) Stale() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	type state struct {
		owner   Call            // the last call, unless its replica gave the object up
		holders map[string]bool // replicas that handled it and did not give it up
	}
	objs := map[cache.Key]*state{}
	var out []Call
	for _, h := range c.all {
		s := objs[h.Key]
		if s == nil {
			s = &state{holders: map[string]bool{}}
			objs[h.Key] = s
		}
		if h.MovedOut {
			delete(s.holders, h.Replica)
			if s.owner.Replica == h.Replica {
				s.owner = Call{}
			}
			continue
		}
		if o := s.owner; o.Replica != "" && o.Replica != h.Replica && (o.RV > h.RV || o.RV == h.RV && s.holders[h.Replica]) {
			out = append(out, h)
		}
		s.owner, s.holders[h.Replica] = h, true
	}
	return out
}

package reconcile

import (
	"sync"

	"k8s.io/client-go/util/workqueue"

	"github.com/typedinformer/informer/cache"
)

// twoLevel is the storage under the controller's workqueue
// (workqueue.Queue): keys of live changes are handed out before keys whose
// only work is background (the initial list, a resync, a relist of an
// unchanged object), each level in arrival order. So that a steady stream
// of live changes cannot hold the background work back for ever, one
// background key goes after every liveBurst live keys while both wait.
//
// The workqueue keeps its own bookkeeping (a key is queued once, never
// handed to two workers at once) and calls Push, Touch, Pop and Len with
// its lock held; which level a key goes to is decided by marks that the
// controller's handler sets, with twoLevel's own lock, before it adds the
// key. Lock order: the workqueue's lock, then mu; the handler takes mu
// alone.
type twoLevel struct {
	mu sync.Mutex
	// low marks keys whose pending work came only from the initial list.
	low map[cache.Key]struct{}
	// where says which level a queued key is in; it is the truth, and the
	// slices may hold stale entries for keys moved or already popped.
	where      map[cache.Key]level
	live, init []cache.Key
	// background counts the keys queued at levelInit.
	background int
	// streak counts live keys popped in a row while background keys
	// waited.
	streak int
}

// liveBurst is how many live keys in a row may go before a waiting
// background key: background work keeps at least about 1% of the
// workers' time under any load.
const liveBurst = 100

type level uint8

const (
	levelLive level = iota + 1
	levelInit
)

var _ workqueue.Queue[cache.Key] = (*twoLevel)(nil)

func newTwoLevel() *twoLevel {
	return &twoLevel{low: map[cache.Key]struct{}{}, where: map[cache.Key]level{}}
}

// markBackground says key's work is background: it keeps that level,
// retries included, until a live change or the end of its work (forget).
func (q *twoLevel) markBackground(key cache.Key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.low[key] = struct{}{}
}

// markLive says the next add of key is a live change: it goes first,
// and a key queued at the background level moves up (in Touch).
func (q *twoLevel) markLive(key cache.Key) { q.forget(key) }

// forget drops key's mark once its work is done.
func (q *twoLevel) forget(key cache.Key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.low, key)
}

// Push queues a key at the level its mark says.
func (q *twoLevel) Push(key cache.Key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.low[key]; ok {
		q.where[key] = levelInit
		q.init = append(q.init, key)
		q.background++
		return
	}
	q.where[key] = levelLive
	q.live = append(q.live, key)
}

// Touch is called for a key added again while queued: a live change
// moves it to the live level.
func (q *twoLevel) Touch(key cache.Key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, low := q.low[key]; low || q.where[key] != levelInit {
		return
	}
	q.where[key] = levelLive
	q.live = append(q.live, key)
	q.background--
}

// Len is the number of queued keys.
func (q *twoLevel) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.where)
}

// Pop returns the oldest live key, else the oldest background one (and
// a background one after liveBurst live ones). The workqueue calls it only
// when Len is positive.
func (q *twoLevel) Pop() cache.Key {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.streak < liveBurst {
		if key, ok := pop(&q.live, q.where, levelLive); ok {
			if q.background > 0 {
				q.streak++
			}
			return key
		}
	}
	q.streak = 0
	if key, ok := pop(&q.init, q.where, levelInit); ok {
		q.background--
		return key
	}
	key, _ := pop(&q.live, q.where, levelLive)
	return key
}

// pop takes the first entry of s that is still queued at lvl, dropping
// stale entries on the way.
func pop(s *[]cache.Key, where map[cache.Key]level, lvl level) (cache.Key, bool) {
	for len(*s) > 0 {
		key := (*s)[0]
		(*s)[0] = cache.Key{}
		*s = (*s)[1:]
		if where[key] == lvl {
			delete(where, key)
			if len(*s) == 0 {
				*s = nil // let the backing array go
			}
			return key, true
		}
	}
	*s = nil
	return cache.Key{}, false
}

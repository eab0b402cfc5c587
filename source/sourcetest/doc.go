// Package sourcetest helps test code that consumes or implements a
// source.Source, as net/http/httptest does for HTTP.
//
//   - [Fake] is an in-memory source that behaves like a kube-apiserver where
//     list+watch clients can tell (resourceVersions, a bounded history,
//     410 Gone after compaction, consistent pages, streaming lists,
//     selectors), with REST verbs to change it (Create, Update, Delete, Get)
//     and fault knobs (cut watches, drop events, fail lists and watches,
//     inject errors and bad events). [Fake.ListerWatcher] serves the same
//     data to client-go, so one fake can feed this module's informers and
//     client-go's side by side.
//   - [Faulty] wraps any Source, the adapters of a real server included,
//     and injects faults under a seeded random plan or a script: cut,
//     stalled and delayed watches, 410 Gone, too-large resourceVersions,
//     429, 500 and 403 in the server's forms, duplicated events, events
//     lost in a way a relist recovers, and objects of the wrong type, nil
//     objects and malformed events. It logs each fault where it happened
//     and counts requests, for invariant checks (package informertest).
//   - [Run] is the conformance suite for Source implementations, in the
//     style of testing/slogtest: list, pagination, watch from a
//     resourceVersion, 410 Gone, streaming lists with the end bookmark,
//     label selectors, and Stop.
//
// # Running the conformance suite
//
// Run takes a function that makes a fresh [Case] for each check: the
// Source under test and the verbs that change what it serves. For a
// Source over a Fake:
//
//	func TestConformance(t *testing.T) {
//		sourcetest.Run(t, func(t *testing.T) sourcetest.Case[*corev1.Pod] {
//			f := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
//			src, err := source.FromListerWatcher[*corev1.Pod](f.ListerWatcher())
//			if err != nil {
//				t.Fatal(err)
//			}
//			return sourcetest.Case[*corev1.Pod]{
//				Source:    src,
//				Namespace: "test",
//				New: func(name string, labels map[string]string) *corev1.Pod {
//					return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: name, Labels: labels}}
//				},
//				Create:  func(_ context.Context, p *corev1.Pod) (*corev1.Pod, error) { return f.Create(p) },
//				Update:  func(_ context.Context, p *corev1.Pod) (*corev1.Pod, error) { return f.Update(p) },
//				Delete:  func(_ context.Context, k cache.Key) error { _, err := f.Delete(k); return err },
//				Compact: func(context.Context) error { f.Compact(); return nil },
//			}
//		})
//	}
//
// Against an API server, newCase can create a namespace per check and
// use a clientset's verbs; leave Compact nil if the server's history
// cannot be compacted on demand, and set NoWatchList if it lacks
// streaming lists. Each check is a subtest, so -run selects them
// (-run 'TestConformance/ListPages').
package sourcetest

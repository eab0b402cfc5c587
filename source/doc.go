// Package source is where a typed informer gets its data: a [Source] lists
// and watches objects of one type T and is the only part of the pipeline that
// talks to an API server (or a file tree, or a test).
//
// Adapters turn what exists into a Source: [FromClient] takes any typed
// clientset client (clientset.CoreV1().Pods(ns)), [FromListerWatcher] takes a
// client-go cache.ListerWatcher, and [Fake] is an in-memory,
// resourceVersion-aware source with fault injection for tests and demos.
//
// The untyped runtime.Object of client-go becomes a T in exactly one place,
// [As], with a checked conversion: an object of the wrong type, or a nil one,
// becomes an error that names the expected and the actual type, never a
// panic. In a watch stream such an object arrives as an [Event] of type
// watch.Error carrying that error.
//
// Every error a Source returns is an [*Error] that says which phase failed
// (list, watch start, or an in-stream watch error) and wraps the cause, so
// apierrors.IsForbidden, apierrors.IsGone and errors.Is work on it.
package source

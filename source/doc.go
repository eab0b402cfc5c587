// Package source is where a typed informer gets its data: a [Source] lists
// and watches objects of one type T and is the only part of the pipeline that
// talks to an API server (or a file tree, or a test).
//
// Adapters turn what exists into a Source:
//
//   - [FromConfig] needs only a *rest.Config: it finds a built-in T's kind
//     from its Go package (a CRD's in a scheme, or as given), its resource
//     with one discovery request, and decodes JSON or protobuf once,
//     straight into T, without managedFields by default; in JSON it lists
//     item by item too ([ItemLister]), so that a list the server sends
//     whole is never held whole. It serves
//     built-in types and CRDs defined as plain Go structs, and links no
//     API group a program does not use.
//   - [FromClient] takes any typed clientset client
//     (clientset.CoreV1().Pods(ns)), client-go's fake clientset included.
//   - [FromListerWatcher] takes a client-go cache.ListerWatcher.
//   - [FromDynamic] and [FromMetadata] serve any resource as unstructured
//     objects or as metadata only; [Convert] turns unstructured objects
//     into a Go struct in no scheme.
//
// Package source/file serves a directory of manifests. Package sourcetest
// has an in-memory, resourceVersion-aware fake with fault injection, and
// the conformance suite every Source should pass.
//
// The untyped runtime.Object of client-go becomes a T in exactly one place,
// [As], with a checked conversion: an object of the wrong type, or a nil one,
// becomes an error that names the expected and the actual type, never a
// panic.
//
// # Errors
//
// A watch stream delivers events ([Event]: ADDED, MODIFIED, DELETED,
// BOOKMARK) and nothing else; an ERROR event, a malformed frame or an
// object of the wrong type is the error [Watcher.Next] returns. Every error
// a Source returns is an [*Error] that says which phase failed (list, watch
// start, or in the watch stream) and wraps the cause, so
// apierrors.IsForbidden, apierrors.IsGone and errors.Is work on it.
//
// One object whose bytes were read but do not decode into T fails neither
// a list nor a stream: [FromConfig] puts it, named by its metadata, in
// [List.Undecodable] beside the items that decoded, and [Watcher.Next]
// returns it as an [*UndecodableError] for its event alone, then goes on.
// An informer quarantines it under its key.
//
// # Resources
//
// # Info
//
// Every source says what it lists and what it can do in one value,
// [Info], from [Source.Info]: its resource and scope (informers use
// [ResourceOf] to name the resource in errors and to learn the scope),
// whether it can stream lists, whether its objects are the caller's alone,
// and whether it dropped managedFields. A source that wraps another
// forwards the wrapped source's Info in one line.
package source

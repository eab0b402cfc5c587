// Package file is a source.Source over a directory of Kubernetes
// manifests: an informer fed by it keeps a typed cache of the objects the
// files define and tells its handlers when a file changes, as if the
// directory were an API server. It serves controllers run without a
// cluster (a local demo, a test, a GitOps checkout), and configuration
// shipped as manifests in a ConfigMap volume.
//
//	src, err := file.New[*corev1.ConfigMap]("/etc/app/manifests", file.Options{})
//	inf, err := typed.NewInformer(src, typed.Options[*corev1.ConfigMap]{})
//
// It is a package of its own so that its dependency on file notifications
// stays out of the core packages.
//
// # What is read
//
// The source reads the files of the directory (not of its subdirectories)
// named *.yaml, *.yml or *.json, regular files or links to them, except
// hidden ones (a name starting with a dot: editors' swap and lock files,
// the ..data links of a ConfigMap volume). A YAML file may hold several
// documents separated by "---" lines; a JSON file holds one JSON value or
// several in a row. A document is one object, or a list of them (kind
// List, or T's own list kind such as PodList, whose items may omit their
// type).
//
// Only the objects whose apiVersion and kind are T's are served: documents
// of other kinds are ignored, so one directory can feed informers of
// several types. T's apiVersion and kind come from Options.GroupVersionKind
// or, by default, from Options.Scheme (client-go's scheme of the built-in
// types). Documents are decoded with the API machinery's JSON rules
// (field names are case-sensitive; YAML is converted to JSON first);
// unknown fields are ignored, as a server does without strict field
// validation. The resourceVersion a file gives is ignored: the source
// assigns its own.
//
// # Bad files and duplicates
//
// A file that cannot be read, or one of whose documents is not valid YAML
// or JSON or not a valid object of its kind (no metadata.name, a field of
// the wrong type), is reported as an [*Error] naming the file and the line
// (ErrSyntax, ErrInvalid), to Options.ErrorHandler once and in
// [Source.Errors] until it is fixed. Such a file changes nothing: the
// objects of its last good version stay (none if it never read well), so
// saving a half-edited file never deletes objects, and fixing it brings
// its objects in. The other files are not affected, and List and Watch do
// not fail: the informer keeps working.
//
// Two definitions of the same namespace and name: the one in the file
// whose name sorts first wins (in a file, the first document); each other
// one is reported as ErrDuplicate and ignored. Removing the winner brings
// in the next one, as a MODIFIED event if its content differs.
//
// # Changes and resourceVersions
//
// Each scan of the directory compares what the files define with what the
// source serves and makes one change per object that differs, ADDED,
// MODIFIED or DELETED, each with the next resourceVersion, in key order.
// An object whose content did not change makes no event, whatever was
// rewritten around it; an object removed from its file, or whose file was
// deleted, is DELETED. Versions start at the source's creation time in
// microseconds, so that versions of an earlier run of the program are
// older than any of this one's. The last Options.History changes are
// remembered: a watch resumes from any version since, and gets 410 Gone
// (apierrors.NewResourceExpired) from an older or unknown one, on which an
// informer relists. List pages (Limit, Continue) are consistent snapshots
// at the first page's version; streaming lists (sendInitialEvents with the
// initial-events-end bookmark) are served; label selectors and the
// metadata.name and metadata.namespace field selectors are honoured.
//
// # Following the directory: notifications, with a rescan as backstop
//
// List, Watch and [Source.Rescan] read the directory when called. While at
// least one watch is open, a goroutine follows it with file notifications
// (fsnotify: inotify on Linux, kqueue, ReadDirectoryChangesW), which see a
// change within milliseconds at no cost while nothing changes; polling
// would need a short period, and reading every file at that period, for
// the same delay. The directory is watched rather than each file, so that
// editors that save by writing a temporary file and renaming it over the
// old one, and ConfigMap volumes that swap a link, are seen like any
// write. After a notification the source waits until the directory has
// been quiet for 50ms (at most a second) and then reads it, so a file
// written in a few steps is read once. A file written more slowly may be
// read half-written: if what was read is not valid it is reported and the
// file kept as it was, but if it is (the first of two documents, say), the
// objects not yet written are DELETED until they are. So write files
// whole, by renaming.
//
// Notifications miss some changes: those made on another machine to a
// network file system (NFS, SMB), and every change once the system's limit
// of watches is reached, or when their queue overflows. So the directory is
// also read every Options.RescanInterval (30s by default) while a watch is
// open, and at once after an overflow; if notifications cannot be set up
// at all, that is reported and the rescans carry on alone. Each rescan
// reads every file but decodes only those whose content changed. If the
// directory itself cannot be read (removed, unmounted), that is reported
// and the source keeps serving what it last read; it follows the directory
// again once it is back: at once, as the directory's parent is watched
// while it is gone (a directory removed and recreated, a volume mounted
// again), or at the next rescan where the parent cannot be watched.
//
// The goroutine runs only while a watch is open: the last watch's Stop ends
// it and waits for it, and a source with no open watch holds no goroutine
// and no file descriptor.
package file

// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 at
// the version pinned in this module's go.mod. It exists so that the test
// cluster can run the same etcd release that k8s.io/kubernetes is built
// against without downloading a prebuilt binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}

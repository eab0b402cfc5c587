//go:build tools

// Package tools pins the command packages that build.sh compiles, so that
// `go mod tidy` keeps their dependencies in go.mod and go.sum.
//
// Build the API server with:
//
//	go build -o ../../bin/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)

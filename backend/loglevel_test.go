//go:build integration

package backend

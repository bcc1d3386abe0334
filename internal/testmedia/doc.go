// Package testmedia gives tests storage that fails the way real media do: a
// read-only view of a directory and a small file system to fill. It is for
// tests only (its functions take a *testing.T and skip where the machine
// cannot provide the medium).
package testmedia

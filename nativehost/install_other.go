//go:build !windows

package nativehost

import "errors"

// errNoRegistry: the registry exists on Windows only.
var errNoRegistry = errors.New("nativehost: the registry exists on Windows only")

func registerManifest(Browser, bool, string) (string, error) { return "", errNoRegistry }

func unregisterManifest(Browser, bool) (string, error) { return "", errNoRegistry }

func registeredManifest(Browser, bool) string { return "" }

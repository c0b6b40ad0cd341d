//go:build windows

package nativehost

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows/registry"
)

// rootKey is HKEY_LOCAL_MACHINE for a system install, else
// HKEY_CURRENT_USER.
func rootKey(system bool) (registry.Key, string) {
	if system {
		return registry.LOCAL_MACHINE, `HKEY_LOCAL_MACHINE\`
	}
	return registry.CURRENT_USER, `HKEY_CURRENT_USER\`
}

// registerManifest writes the registry key whose default value is the
// manifest's path, where browser b looks for the host.
func registerManifest(b Browser, system bool, manifestPath string) (string, error) {
	root, name := rootKey(system)
	k, _, err := registry.CreateKey(root, RegistryKey(b), registry.SET_VALUE)
	if err != nil {
		return "", fmt.Errorf("nativehost: registry key %s%s: %w", name, RegistryKey(b), err)
	}
	defer k.Close()
	if err := k.SetStringValue("", manifestPath); err != nil {
		return "", fmt.Errorf("nativehost: registry key %s%s: %w", name, RegistryKey(b), err)
	}
	return name + RegistryKey(b), nil
}

// unregisterManifest deletes the key; "" when there was none.
func unregisterManifest(b Browser, system bool) (string, error) {
	root, name := rootKey(system)
	err := registry.DeleteKey(root, RegistryKey(b))
	if errors.Is(err, registry.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("nativehost: registry key %s%s: %w", name, RegistryKey(b), err)
	}
	return name + RegistryKey(b), nil
}

// registeredManifest returns the manifest path the key names, "" when none.
func registeredManifest(b Browser, system bool) string {
	root, _ := rootKey(system)
	k, err := registry.OpenKey(root, RegistryKey(b), registry.QUERY_VALUE)
	if err != nil {
		return ""
	}
	defer k.Close()
	v, _, err := k.GetStringValue("")
	if err != nil {
		return ""
	}
	return v
}

// Package names is the name server (FI_PSM2_NAME_SERVER): it lets
// fi_getinfo(node, service) on a client find the endpoint a server opened
// with that service, as fabtests' client/server tests expect. It knows
// endpoint names as 16 opaque bytes and the job by its key; the provider
// starts it, registers its endpoints and resolves nodes through it
// (provider/nameserver.go).
package names

module github.com/gopsm2/libfabric-psm2

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/mattn/go-pointer v0.0.1
	golang.org/x/sys v0.49.0
)

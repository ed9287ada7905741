module github.com/gopsm2/libfabric-psm2

go 1.26.0

require github.com/mattn/go-pointer v0.0.1

require github.com/google/go-cmp v0.7.0

require golang.org/x/sys v0.49.0

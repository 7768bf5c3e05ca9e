module github.com/emberml/ember

go 1.26

require (
	github.com/chewxy/math32 v1.11.1
	github.com/stretchr/testify v1.11.1
	golang.org/x/sys v0.38.0
	gonum.org/v1/gonum v0.17.0
	google.golang.org/protobuf v1.36.11
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/ebitengine/purego v0.9.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

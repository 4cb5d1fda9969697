package abi_test

import (
	"fmt"

	"github.com/wasmtask/wasmtask/abi"
)

func ExampleDecodeManifest() {
	m, err := abi.DecodeManifest([]byte(`{"abi":1,"tools":[
		{"name":"echo","description":"Repeats its input"},
		{"name":"render","taskSupport":"required"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range m.Tools {
		fmt.Println(t.Name, t.TaskSupport, string(t.InputSchema))
	}

	_, err = abi.DecodeManifest([]byte(`{"abi":2,"tools":[{"name":"x"}]}`))
	fmt.Println(err)
	// Output:
	// echo forbidden {"type":"object"}
	// render required {"type":"object"}
	// ABI version mismatch: module declares ABI v2, this host speaks v1: rebuild the module against wasmtask abi v1
}

// Command mainpkg prints the message type name of a type of a main
// package, for TestTypeNamesOfAMainPackage.
package main

import (
	"fmt"
	"reflect"

	"github.com/replaycheck/replaycheck/node"
)

// Ack is a message of a system written in package main.
type Ack struct{ Seq uint64 }

func name() string { return node.TypeName(reflect.TypeFor[*Ack]()) }

func main() { fmt.Println(name()) }

package main

import (
	"fmt"
	"testing"
)

func TestPrintName(t *testing.T) { fmt.Println("name under test:", name()) }

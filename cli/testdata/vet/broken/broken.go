// Package broken does not compile, for replay vet's tests.
package broken

func f() int { return undefinedName }

package source_test

import (
	"context"
	"fmt"

	"github.com/typedinformer/informer/source"
)

// A source reads the hints its caller put on the context; an informer puts
// them there itself.
func ExampleWithHints() {
	ctx := source.WithHints(context.Background(), source.Hints{DropManagedFields: true})
	fmt.Println(source.HintsFrom(ctx).DropManagedFields)
	fmt.Println(source.HintsFrom(context.Background()).DropManagedFields)
	// Output:
	// true
	// false
}

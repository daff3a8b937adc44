package budget_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/httptools/httptools/budget"
)

// Each call draws on a hold before it allocates, and gives the bytes back
// when it is done; a draw that cannot be granted within its deadline is an
// *OverError.
func Example() {
	b := budget.New(1 << 20) // 1 MiB for everything in flight
	first := b.Hold()
	if err := first.Take(context.Background(), 768<<10); err != nil {
		fmt.Println(err)
	}
	second := b.Hold()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := second.Take(ctx, 512<<10)
	var over *budget.OverError
	fmt.Println(errors.As(err, &over), b.InUse())

	first.Release() // the first call has written its answer
	fmt.Println(second.Take(context.Background(), 512<<10), b.InUse())
	second.Release()
	fmt.Println(b.InUse())
	// Output:
	// true 786432
	// <nil> 524288
	// 0
}

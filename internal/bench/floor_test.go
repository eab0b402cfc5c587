package bench_test

import "testing"

// BenchmarkHandoff measures the floor under any pipeline that moves an
// event between goroutines on this machine: one op is one round trip of a
// value between two goroutines over unbuffered channels (ping-pong: two
// hand-offs, one each way), or one value through a buffered channel from
// a producer to a consumer (a hand-off amortised over a stream).
func BenchmarkHandoff(b *testing.B) {
	if !runs("") {
		b.Skip("a floor of the machine, run with our side") // a return would print a result line
	}
	b.Run("kind=ping-pong", func(b *testing.B) {
		ping, pong := make(chan int), make(chan int)
		go func() {
			for v := range ping {
				pong <- v
			}
			close(pong)
		}()
		for i := range b.N {
			ping <- i
			<-pong
		}
		close(ping)
		<-pong
	})
	b.Run("kind=buffered", func(b *testing.B) {
		ch := make(chan int, 1024)
		done := make(chan struct{})
		go func() {
			for range ch {
			}
			close(done)
		}()
		for i := range b.N {
			ch <- i
		}
		close(ch)
		<-done
	})
}

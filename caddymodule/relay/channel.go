package relay

import (
	"errors"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/seckilledge/seckill/contract"
)

// openChannelWithin opens a confirm channel, giving up after d: amqp091's calls wait for the
// broker's answer without a deadline, and a connection in the middle of its automatic
// recovery may never give one.
func openChannelWithin(conn *amqp.Connection, batch int, d time.Duration) (*amqp.Channel, chan amqp.Return, error) {
	type opened struct {
		ch      *amqp.Channel
		returns chan amqp.Return
		err     error
	}
	res := make(chan opened, 1)
	abandoned := make(chan struct{})
	go func() {
		ch, returns, err := openChannel(conn, batch)
		select {
		case res <- opened{ch, returns, err}:
		case <-abandoned:
			if ch != nil {
				closeAsync(ch)
			}
		}
	}()
	select {
	case o := <-res:
		return o.ch, o.returns, o.err
	case <-time.After(d):
		close(abandoned)
		return nil, nil, errors.New("opening a channel timed out")
	}
}

// closeAsync closes a channel without waiting: Close waits for the broker's close-ok, which a
// broken connection never sends.
func closeAsync(ch *amqp.Channel) {
	go func() { _ = ch.Close() }()
}

func openChannel(conn *amqp.Connection, batch int) (*amqp.Channel, chan amqp.Return, error) {
	ch, err := conn.Channel()
	if err != nil {
		return nil, nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, nil, err
	}
	if err := contract.DeclareTopology(ch); err != nil {
		_ = ch.Close()
		return nil, nil, err
	}
	// amqp091's reader goroutine delivers a message's return before its confirm (and blocks
	// until the return is taken), so once a round's confirms are in, every return of the round
	// is buffered here or already taken by serve, which reads them between rounds.
	returns := ch.NotifyReturn(make(chan amqp.Return, 2*batch+16))
	return ch, returns, nil
}

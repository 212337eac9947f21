package nexmark

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Event types, as the Nexmark generator numbers them; TypeEnd is this benchmark's own.
const (
	TypePerson  = 0
	TypeAuction = 1
	TypeBid     = 2
	// TypeEnd is an end-of-input marker, one per input tablet after the last event, its
	// date_time an hour past it: it moves every tablet's event watermark past the last window
	// so that the windowed queries close it. Every query drops it; it is not a counted event.
	TypeEnd = 3
)

// The generator's proportions per 50 events (Nexmark's standard 1 : 3 : 46) and its id bases.
const (
	personProportion  = 1
	auctionProportion = 3
	bidProportion     = 46
	proportionTotal   = personProportion + auctionProportion + bidProportion

	firstPersonID   = 1000
	firstAuctionID  = 1000
	firstCategoryID = 10
	numCategories   = 5

	// Nexmark's defaults: people and auctions a new event may refer to, how far ids may run
	// ahead of the last one generated, and the hot ratios (1 in hotRatio picks at random; the
	// others pick the current hot auction, seller or bidder, every hotStride ids).
	numActivePeople    = 1000
	numInFlightAuction = 100
	personIDLead       = 10
	auctionIDLead      = 10
	hotAuctionRatio    = 2
	hotSellerRatio     = 4
	hotBidderRatio     = 4
	hotStride          = 100
	hotChannelRatio    = 2
	channelCount       = 10000

	// Average sizes in bytes the extra column pads each event kind to.
	avgPersonBytes  = 200
	avgAuctionBytes = 500
	avgBidBytes     = 100
)

var (
	usStates   = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	usCities   = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	hotChannel = []string{"Google", "Facebook", "Baidu", "Apple"}
)

// Event is one Nexmark event: a person, an auction or a bid (Type), with the columns of its
// kind set and the others zero. DateTime is the event time in milliseconds.
type Event struct {
	Type int64
	// Person: ID, Name, Email, CreditCard, City, State. Auction: ID, ItemName, Description,
	// InitialBid, Reserve, Expires, Seller, Category. Bid: Auction, Bidder, Price, Channel, URL.
	ID                                   int64
	Name, Email, CreditCard, City, State string
	ItemName, Description                string
	InitialBid, Reserve, Expires         int64
	Seller, Category                     int64
	Auction, Bidder, Price               int64
	Channel, URL                         string
	DateTime                             int64
	Extra                                string
}

// GenConfig shapes the generated stream. The zero value of a field is its default.
type GenConfig struct {
	// Seed draws every event; event i uses a generator seeded by (Seed, i), so a stream is the
	// same for a seed whatever is generated around it (default 1).
	Seed uint64
	// EventsPerSecond is the event-time rate: event i has date_time BaseTime + i/rate seconds
	// (default 10,000, Nexmark's first_event_rate).
	EventsPerSecond int
	// BaseTime is the date_time of event 0 in milliseconds (default 2026-01-01T00:00:00Z).
	BaseTime int64
}

func (c GenConfig) withDefaults() GenConfig {
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.EventsPerSecond <= 0 {
		c.EventsPerSecond = 10000
	}
	if c.BaseTime == 0 {
		c.BaseTime = 1767225600000
	}
	return c
}

// Generate returns events 0..n-1 of the stream c describes.
func Generate(c GenConfig, n int) []Event {
	c = c.withDefaults()
	out := make([]Event, n)
	for i := range out {
		out[i] = c.event(int64(i))
	}
	return out
}

// timeOf is the date_time of event i in milliseconds.
func (c GenConfig) timeOf(i int64) int64 {
	return c.BaseTime + i*1000/int64(c.EventsPerSecond)
}

// event generates event i: its kind by its offset within its group of 50.
func (c GenConfig) event(i int64) Event {
	rng := rand.New(rand.NewPCG(c.Seed, uint64(i)))
	ts := c.timeOf(i)
	switch off := i % proportionTotal; {
	case off < personProportion:
		return newPerson(rng, i, ts)
	case off < personProportion+auctionProportion:
		return newAuction(rng, i, ts)
	default:
		return newBid(rng, i, ts)
	}
}

// lastPerson is the 0-based id of the last person generated up to event i.
func lastPerson(i int64) int64 {
	group, off := i/proportionTotal, i%proportionTotal
	return group*personProportion + min(off, personProportion-1)
}

// lastAuction is the 0-based id of the last auction generated up to event i (the group's
// last auction when i comes before it, the previous group's when i is its person).
func lastAuction(i int64) int64 {
	group, off := i/proportionTotal, i%proportionTotal
	switch {
	case off < personProportion:
		group--
		off = auctionProportion - 1
	case off >= personProportion+auctionProportion:
		off = auctionProportion - 1
	default:
		off -= personProportion
	}
	return group*auctionProportion + off
}

// somePerson picks a 0-based person id among the active people, up to personIDLead ahead of
// the last one generated (a person the stream has not produced yet).
func somePerson(rng *rand.Rand, i int64) int64 {
	n := lastPerson(i) + 1
	active := min(n, numActivePeople)
	return n - active + rng.Int64N(active+personIDLead)
}

// someAuction picks a 0-based auction id among those in flight, up to auctionIDLead ahead.
func someAuction(rng *rand.Rand, i int64) int64 {
	hi := lastAuction(i)
	lo := max(hi-numInFlightAuction, 0)
	return lo + rng.Int64N(hi-lo+1+auctionIDLead)
}

// price is Nexmark's price draw: 10^(6u) dollars in cents, u uniform in [0, 1).
func price(rng *rand.Rand) int64 {
	return int64(math.Round(math.Pow(10, rng.Float64()*6) * 100))
}

const letters = "abcdefghijklmnopqrstuvwxyz"

// word is n random lower-case letters.
func word(rng *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n)
	for range n {
		b.WriteByte(letters[rng.IntN(len(letters))])
	}
	return b.String()
}

// text is a string of random words of at most maxLen bytes (at least one byte).
func text(rng *rand.Rand, maxLen int) string {
	n := 1 + rng.IntN(maxLen)
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(word(rng, 1+rng.IntN(min(10, n))))
	}
	return b.String()[:n]
}

// extra pads an event whose other columns take size bytes towards avg bytes: a random string
// of avg-size bytes ± 20% ("" when the event is already larger). Like the reference generator
// it counts a person's and an auction's strings and 8 bytes per number, and a bid's numbers
// only (its channel and url come on top).
func extra(rng *rand.Rand, size, avg int) string {
	if size >= avg {
		return ""
	}
	want := avg - size
	delta := want / 5
	return word(rng, want-delta+rng.IntN(2*delta+1))
}

func newPerson(rng *rand.Rand, i, ts int64) Event {
	e := Event{Type: TypePerson, ID: lastPerson(i) + firstPersonID, DateTime: ts}
	e.Name = firstNames[rng.IntN(len(firstNames))] + " " + lastNames[rng.IntN(len(lastNames))]
	e.Email = word(rng, 7) + "@" + word(rng, 5) + ".com"
	var cc strings.Builder
	for g := range 4 {
		if g > 0 {
			cc.WriteByte(' ')
		}
		cc.WriteString(strconv.Itoa(1000 + rng.IntN(9000)))
	}
	e.CreditCard = cc.String()
	e.City = usCities[rng.IntN(len(usCities))]
	e.State = usStates[rng.IntN(len(usStates))]
	e.Extra = extra(rng, 8+len(e.Name)+len(e.Email)+len(e.CreditCard)+len(e.City)+len(e.State), avgPersonBytes)
	return e
}

func newAuction(rng *rand.Rand, i, ts int64) Event {
	e := Event{Type: TypeAuction, ID: lastAuction(i) + firstAuctionID, DateTime: ts}
	if rng.IntN(hotSellerRatio) > 0 {
		e.Seller = lastPerson(i) / hotStride * hotStride
	} else {
		e.Seller = somePerson(rng, i)
	}
	e.Seller += firstPersonID
	e.Category = firstCategoryID + rng.Int64N(numCategories)
	e.InitialBid = price(rng)
	e.Reserve = e.InitialBid + price(rng)
	e.ItemName = text(rng, 20)
	e.Description = text(rng, 100)
	// An auction runs for 1 to 11 seconds of event time.
	e.Expires = ts + 1000 + rng.Int64N(10001)
	e.Extra = extra(rng, 8+len(e.ItemName)+len(e.Description)+5*8, avgAuctionBytes)
	return e
}

func newBid(rng *rand.Rand, i, ts int64) Event {
	e := Event{Type: TypeBid, DateTime: ts}
	if rng.IntN(hotAuctionRatio) > 0 {
		e.Auction = lastAuction(i) / hotStride * hotStride
	} else {
		e.Auction = someAuction(rng, i)
	}
	e.Auction += firstAuctionID
	if rng.IntN(hotBidderRatio) > 0 {
		e.Bidder = lastPerson(i)/hotStride*hotStride + 1
	} else {
		e.Bidder = somePerson(rng, i)
	}
	e.Bidder += firstPersonID
	e.Price = price(rng)
	if rng.IntN(hotChannelRatio) > 0 {
		k := rng.IntN(len(hotChannel))
		e.Channel = hotChannel[k]
		e.URL = "https://www.nexmark.com/" + strings.ToLower(hotChannel[k]) + "/item.htm?query=1"
	} else {
		n := rng.IntN(channelCount)
		e.Channel = "channel-" + strconv.Itoa(n)
		e.URL = "https://www.nexmark.com/" + word(rng, 5) + "/" + word(rng, 5) + "/item.htm?query=1&channel_id=" + strconv.Itoa(n)
	}
	e.Extra = extra(rng, 4*8, avgBidBytes) // the numeric columns, as the reference counts a bid
	return e
}

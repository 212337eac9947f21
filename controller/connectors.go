package controller

// Every connector class of this build registers itself: the controller parses specs and
// lists source partitions through the connector SPI.
import _ "github.com/ytflow/yt-flow/connectors/all"

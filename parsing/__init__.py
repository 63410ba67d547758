"""Layer 2: the only places JSON decoders and XML parsers are built (with limits), JSON Schema
and XSD validation mapped to line and column, and the codecs several formats share (RFC 29
hostlists and idsets). Imports only ``dcx.core``."""

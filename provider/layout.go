package provider

import "github.com/gopsm2/libfabric-psm2/internal/cabi"

// CLayout lists the provider's pages as the C side sees them (fastpath.go
// and fastep.go document them), for cmd/libfabric-psm2/layout.h.
func CLayout() []cabi.Group {
	return []cabi.Group{
		{Title: "Operation flags", Source: "provider/msg.go", Consts: []cabi.Const{
			cabi.Value("PSM2_NO_COMPLETION", NoCompletion, "a send of the fi_inject* calls: never a completion"),
		}},
		{Title: "Message header flags", Source: "provider/msg.go", Consts: []cabi.Const{
			cabi.Value("HF_TAGGED", hfTagged, "FI_TAGGED message (else FI_MSG)"),
			cabi.Value("HF_DATA", hfData, "carries FI_REMOTE_CQ_DATA"),
		}},
		{Title: "Endpoint page, words", Source: "provider/fastep.go", Consts: []cabi.Const{
			cabi.Word("EPF_SEND_OK", epfSendOK, ""),
			cabi.Word("EPF_RECV_OK", epfRecvOK, ""),
			cabi.Word("EPF_TAG_MASK", epfTagMask, ""),
			cabi.Word("EPF_INJECT", epfInject, ""),
			cabi.Word("EPF_CAPS", epfCaps, ""),
			cabi.Word("EPF_NPEERS", epfNPeers, ""),
			cabi.Word("EPF_PEERS", epfPeers, ""),
			cabi.Word("EPF_DOMAIN", epfDomain, ""),
			cabi.Word("EPF_RQ_COUNT", epfRQCount, ""),
			cabi.Word("EPF_DELIVER", epfDeliver, ""),
			cabi.Word("EPF_RX_CQ", epfRxCQ, ""),
			cabi.Word("EPF_RX_SEL", epfRxSel, ""),
			cabi.Word("EPF_RING", epfRing, ""),
			cabi.Word("EPF_TX_CQ", epfTxCQ, ""),
			cabi.Word("EPF_TX_SEL", epfTxSel, ""),
			cabi.Word("EPF_TX_CQ_OK", epfTxCQOK, ""),
			cabi.Word("EPF_RQ", epfRQ, "the receive queue"),
			cabi.Value("EPF_RQ_CAP", rqCap, "entries"),
			cabi.Word("EPF_SENDERS", epfSenders, "the senders' table: fast-peer descriptors by epid hash"),
			cabi.Value("EPF_SENDERS_SHIFT", 64-sendersLog2, "slot = (epid * SENDER_HASH) >> EPF_SENDERS_SHIFT"),
			cabi.Value("SENDER_HASH", uint64(senderHash), ""),
			cabi.Word("EPF_RQ_WORDS", rqEntrySize, "words an entry takes"),
			cabi.Word("RQ_BUF", rqBuf, "in an entry"),
			cabi.Word("RQ_LEN", rqLen, ""),
			cabi.Word("RQ_SRC", rqSrc, ""),
			cabi.Word("RQ_TAG", rqTag, ""),
			cabi.Word("RQ_IGNORE", rqIgnore, ""),
			cabi.Word("RQ_CONTEXT", rqContext, ""),
			cabi.Word("RQ_FLAGS", rqFlags, ""),
		}},
		{Title: "Domain page, bytes", Source: "provider/fastpath.go", Consts: []cabi.Const{
			cabi.Value("DOMF_BUSY", domBusy, "uint64: Go has work the rings do not show"),
			cabi.Value("DOMF_NRINGS", domNRings, "uint64: probe words that follow"),
			cabi.Value("DOMF_RINGS", domRings, "uint64[DOMF_MAX_RINGS]: probe words"),
			cabi.Value("DOMF_MAX_RINGS", maxFastRings, "count"),
			cabi.Value("DOMF_LOCK", domLockWord, "uint32 futex: the domain lock"),
			cabi.Value("DOMF_LOCKING", domLocking, "uint32: 1 if the domain locks at all"),
			cabi.Value("DOMF_QUEUED", domQueued, "uint64: receives C queued, not posted yet"),
			cabi.Value("DOMF_NEPS", domNEPs, "uint64: endpoint pages that follow at DOMF_EPS"),
			cabi.Value("DOMF_EPS", domEPs, "uint64[DOMF_MAX_EPS]: the pages C may deliver for"),
			cabi.Value("DOMF_MAX_EPS", maxFastEPs, "count"),
			cabi.Value("DOMF_CQUEUED", domCQueued, "uint64: completions C queued in some CQ"),
		}},
		{Title: "CQ page, words", Source: "provider/fastpath.go", Consts: []cabi.Const{
			cabi.Word("CQF_COUNT", cqCount, "entries in Go's ring"),
			cabi.Word("CQF_DOMAIN", cqDomain, "the domain page"),
			cabi.Word("CQF_STRIDE", cqStride, "entry size in bytes"),
			cabi.Word("CQF_CQUEUED", cqCQueued, "completions C queued"),
			cabi.Word("CQF_SLEEPERS", cqSleepers, "threads blocking in fi_cq_sread: C queues none"),
			cabi.Word("CQF_CENTRIES", cqCEntries, "those completions"),
			cabi.Value("CQF_CCAP", cqCCap, "entries"),
			cabi.Word("CQF_CWORDS", cqCEntrySize, "words an entry takes"),
		}},
	}
}

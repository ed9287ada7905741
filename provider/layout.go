package provider

import "github.com/gopsm2/libfabric-psm2/internal/cabi"

// CLayout lists the provider's pages as the C side sees them (fastpath.go
// and fastep.go document them), for cmd/libfabric-psm2/layout.h.
func CLayout() []cabi.Group {
	w := func(name string, off int, doc string) cabi.Const {
		return cabi.Const{Name: name, Value: uint64(off / 8), Doc: doc}
	}
	b := func(name string, v uint64, doc string) cabi.Const {
		return cabi.Const{Name: name, Value: v, Doc: doc}
	}
	return []cabi.Group{
		{Title: "Operation flags", Source: "provider/msg.go", Consts: []cabi.Const{
			b("PSM2_NO_COMPLETION", NoCompletion, "a send of the fi_inject* calls: never a completion"),
		}},
		{Title: "Message header flags", Source: "provider/msg.go", Consts: []cabi.Const{
			b("HF_TAGGED", uint64(hfTagged), "FI_TAGGED message (else FI_MSG)"),
			b("HF_DATA", uint64(hfData), "carries FI_REMOTE_CQ_DATA"),
		}},
		{Title: "Endpoint page, words", Source: "provider/fastep.go", Consts: []cabi.Const{
			w("EPF_SEND_OK", epfSendOK, ""),
			w("EPF_RECV_OK", epfRecvOK, ""),
			w("EPF_TAG_MASK", epfTagMask, ""),
			w("EPF_INJECT", epfInject, ""),
			w("EPF_CAPS", epfCaps, ""),
			w("EPF_NPEERS", epfNPeers, ""),
			w("EPF_PEERS", epfPeers, ""),
			w("EPF_DOMAIN", epfDomain, ""),
			w("EPF_RQ_COUNT", epfRQCount, ""),
			w("EPF_DELIVER", epfDeliver, ""),
			w("EPF_RX_CQ", epfRxCQ, ""),
			w("EPF_RX_SEL", epfRxSel, ""),
			w("EPF_RING", epfRing, ""),
			w("EPF_TX_CQ", epfTxCQ, ""),
			w("EPF_TX_SEL", epfTxSel, ""),
			w("EPF_TX_CQ_OK", epfTxCQOK, ""),
			w("EPF_RQ", epfRQ, "the receive queue"),
			b("EPF_RQ_CAP", rqCap, "entries"),
			w("EPF_RQ_WORDS", rqEntrySize, "words an entry takes"),
			w("RQ_BUF", rqBuf, "in an entry"),
			w("RQ_LEN", rqLen, ""),
			w("RQ_SRC", rqSrc, ""),
			w("RQ_TAG", rqTag, ""),
			w("RQ_IGNORE", rqIgnore, ""),
			w("RQ_CONTEXT", rqContext, ""),
			w("RQ_FLAGS", rqFlags, ""),
		}},
		{Title: "Domain page, bytes", Source: "provider/fastpath.go", Consts: []cabi.Const{
			b("DOMF_BUSY", domBusy, "uint64: Go has work the rings do not show"),
			b("DOMF_NRINGS", domNRings, "uint64: probe words that follow"),
			b("DOMF_RINGS", domRings, "uint64[DOMF_MAX_RINGS]: probe words"),
			b("DOMF_MAX_RINGS", maxFastRings, "count"),
			b("DOMF_LOCK", domLockWord, "uint32 futex: the domain lock"),
			b("DOMF_LOCKING", domLocking, "uint32: 1 if the domain locks at all"),
			b("DOMF_QUEUED", domQueued, "uint64: receives C queued, not posted yet"),
			b("DOMF_SOLE_EP", domSoleEP, "uint64: the only endpoint's page, or 0"),
			b("DOMF_CQUEUED", domCQueued, "uint64: completions C queued in some CQ"),
		}},
		{Title: "CQ page, words", Source: "provider/fastpath.go", Consts: []cabi.Const{
			w("CQF_COUNT", cqCount, "entries in Go's ring"),
			w("CQF_DOMAIN", cqDomain, "the domain page"),
			w("CQF_STRIDE", cqStride, "entry size in bytes"),
			w("CQF_CQUEUED", cqCQueued, "completions C queued"),
			w("CQF_CENTRIES", cqCEntries, "those completions"),
			b("CQF_CCAP", cqCCap, "entries"),
			w("CQF_CWORDS", cqCEntrySize, "words an entry takes"),
		}},
	}
}

package main

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// floorMode is the hidden first argument that turns the harness into the floor
// server: the harness re-executes itself with it, so that the floor is a process
// of its own whose CPU and memory are measured like the others'.
const floorMode = "floor"

// The floor server is the least any admission webhook can do over the same
// transport: Go's net/http over TLS with the same kind of certificate, HTTP/1.1,
// reading the whole body, decoding request.uid and answering "allowed". Every
// other figure is read as a ratio to it, measured in the same run on the same
// machine.

// floorReview is all the floor decodes of an AdmissionReview.
type floorReview struct {
	Request struct {
		UID string `json:"uid"`
	} `json:"request"`
}

// floorAnswer is the AdmissionReview the floor answers with.
type floorAnswer struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Response   floorDecision `json:"response"`
}

type floorDecision struct {
	UID     string `json:"uid"`
	Allowed bool   `json:"allowed"`
}

// runFloor serves the floor until SIGTERM or SIGINT. args are the flags after
// the mode.
func runFloor(args []string) error {
	fs := flag.NewFlagSet(floorMode, flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "Loopback address to listen on")
	certDir := fs.String("cert-dir", "", "Directory holding tls.crt and tls.key")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(*certDir, certFile), filepath.Join(*certDir, keyFile))
	if err != nil {
		return fmt.Errorf("loading the serving certificate: %w", err)
	}
	srv := &http.Server{
		Addr:              *addr,
		Handler:           http.HandlerFunc(floorHandler),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"http/1.1"},
		},
		// A non-nil empty map turns HTTP/2 off: the floor speaks what the
		// client speaks to every target, HTTP/1.1.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServeTLS("", "") }()
	select {
	case err := <-errc:
		return err
	case <-stop:
		err := srv.Close()
		if e := <-errc; !errors.Is(e, http.ErrServerClosed) {
			err = errors.Join(err, e)
		}
		return err
	}
}

// floorHandler answers /healthz with 200 and any POST with "allowed".
func floorHandler(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusOK)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in floorReview
	if err := json.Unmarshal(raw, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := json.Marshal(floorAnswer{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview",
		Response: floorDecision{UID: in.Request.UID, Allowed: true}})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

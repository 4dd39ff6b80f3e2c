package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
)

// A point sends its stream over and over (a pass is one round of its
// requests), and a shape that came back on every pass would be a repeated
// one, the decision cache's best case, by an artefact of the harness. So a
// unique shape's cpu request is written in nanocores, its last six digits
// zero ("101000000n" is 101m), and pass k ≥ 1 sends those digits as k: 101m
// and k nanocores, a shape no earlier pass sent. The floor gets the same
// bytes; OPA, which reuses no decision, the first pass's input.
//
// The decision check asks kueue-guard about each unique request twice: as
// the first pass sends it and with the largest digits (maxPass), each
// against the reference's evaluation of those bytes. The shipped policies
// compare sums of requests with limits, so a shape's passes lie between the
// two checked.
const (
	passDigits = 6
	maxPass    = 999999
)

// uniqueCPU is a unique shape's cpu request, its pass digits zero.
func uniqueCPU(milli int64) string {
	return strconv.FormatInt(milli, 10) + strings.Repeat("0", passDigits) + "n"
}

// passMarks are the offsets of the pass digits in a review that carries the
// unique cpu request of milli (its requests and limits, and its old object's).
func passMarks(review []byte, milli int64) ([]int, error) {
	needle := []byte(`"` + uniqueCPU(milli) + `"`)
	var marks []int
	for off := 0; ; {
		k := bytes.Index(review[off:], needle)
		if k < 0 {
			break
		}
		marks = append(marks, off+k+len(needle)-2-passDigits)
		off += k + len(needle)
	}
	if len(marks) == 0 {
		return nil, fmt.Errorf("no cpu request %s in the review", uniqueCPU(milli))
	}
	return marks, nil
}

// passVariant is review as pass sends it, written into buf (reused).
func passVariant(buf, review []byte, marks []int, pass uint64) []byte {
	buf = append(buf[:0], review...)
	if len(marks) == 0 || pass == 0 {
		return buf
	}
	var digits [passDigits]byte
	n := 1 + (pass-1)%maxPass
	for k := passDigits - 1; k >= 0; k-- {
		digits[k] = byte('0' + n%10)
		n /= 10
	}
	for _, m := range marks {
		copy(buf[m:], digits[:])
	}
	return buf
}

// lastPassWant evaluates the reference's answer to a review as maxPass sends it.
func lastPassWant(ctx context.Context, ref *referee, review []byte, marks []int) (policyAnswer, error) {
	var ar admissionv1.AdmissionReview
	if err := json.Unmarshal(passVariant(nil, review, marks, maxPass), &ar); err != nil {
		return policyAnswer{}, err
	}
	_, want, err := ref.decide(ctx, &ar)
	return want, err
}

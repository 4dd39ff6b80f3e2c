package workload

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// positiveQuantity reports whether a JSON value (a string such as "2" or "500m", or
// a number) is a quantity greater than zero. Unparseable values count as absent.
func positiveQuantity(v any) bool {
	switch q := v.(type) {
	case string:
		parsed, err := resource.ParseQuantity(q)
		return err == nil && parsed.Sign() > 0
	case int64:
		return q > 0
	case float64:
		return q > 0
	case int:
		return q > 0
	}
	return false
}

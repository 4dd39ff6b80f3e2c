package fieldpath_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kueue-guard/kueue-guard/pkg/fieldpath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestFieldPath(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Field Path Suite")
}

var _ = Describe("field paths", func() {
	DescribeTable("Parse reads field.Path's form and the quoted one alike",
		func(in string, want *field.Path) {
			Expect(fieldpath.Parse(in)).To(Equal(want))
			Expect(fieldpath.String(fieldpath.Parse(in))).To(Equal(fieldpath.String(want)))
		},
		Entry("names", "spec.replicas", field.NewPath("spec", "replicas")),
		Entry("an index", "spec.template.spec.containers[0].resources",
			field.NewPath("spec", "template", "spec", "containers").Index(0).Child("resources")),
		Entry("a key as field.Path renders it", "metadata.labels[kueue.x-k8s.io/queue-name]",
			field.NewPath("metadata", "labels").Key("kueue.x-k8s.io/queue-name")),
		Entry("a quoted key", `metadata.labels["kueue.x-k8s.io/queue-name"]`,
			field.NewPath("metadata", "labels").Key("kueue.x-k8s.io/queue-name")),
		Entry("a quoted number is a key", `data["0"]`, field.NewPath("data").Key("0")),
		Entry("nothing", "", (*field.Path)(nil)),
		Entry("an unclosed bracket keeps what came before", "spec.containers[0", field.NewPath("spec", "containers")),
	)

	It("Segments walks a path root first", func() {
		p := field.NewPath("spec", "template", "metadata", "labels").Key("kueue.x-k8s.io/queue-name")
		Expect(fieldpath.Segments(p)).To(Equal([]string{"spec", "template", "metadata", "labels", "kueue.x-k8s.io/queue-name"}))
		Expect(fieldpath.Segments(field.NewPath("spec", "containers").Index(2).Child("image"))).To(Equal([]string{"spec", "containers", "2", "image"}))
		Expect(fieldpath.Segments(nil)).To(BeEmpty())
	})
})

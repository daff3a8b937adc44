package openapi_test

import (
	"fmt"
	"os"

	_ "github.com/httptools/httptools/httpspec"
	"github.com/httptools/httptools/openapi"
)

// Import the operations of an OpenAPI document as tool manifests, each
// already checked by the loader.
func ExampleImport() {
	src, err := os.ReadFile("testdata/petstore-3.0.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := openapi.Import(src, openapi.Options{Prefix: "petstore"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range res.Manifests {
		fmt.Println(m.ID)
	}
	// Output:
	// petstore.add-pet
	// petstore.find-pets-by-status
	// petstore.get-pet-by-id
	// petstore.delete-pet
	// petstore.get-inventory
	// petstore.place-order
	// petstore.logout-user
}
